//! One HTTP/1.1 connection kept open across requests, written by hand: for what a
//! client library hides (a request on a connection opened before a drain began, a
//! body shorter than its `Content-Length`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A kept-alive connection to a server.
pub struct Connection {
    reader: BufReader<TcpStream>,
}

/// A response read off a [`Connection`].
#[derive(Debug)]
pub struct RawReply {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Connection {
    /// Connects to `base` (`http://host:port`).
    pub fn open(base: &str) -> Self {
        let stream = TcpStream::connect(base.trim_start_matches("http://")).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("read timeout set");
        Self {
            reader: BufReader::new(stream),
        }
    }

    /// Writes `request` as is (head and body) and reads one response.
    pub fn send(&mut self, request: &str) -> RawReply {
        self.reader
            .get_mut()
            .write_all(request.as_bytes())
            .expect("request written");
        self.read_reply()
    }

    /// Reads one response: status line, headers, and a `Content-Length` body.
    pub fn read_reply(&mut self) -> RawReply {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("a status line, got {line:?}"));
        let mut headers = HashMap::new();
        loop {
            let mut header = String::new();
            self.reader.read_line(&mut header).expect("header line");
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').expect("name: value");
            headers.insert(name.to_ascii_lowercase(), value.trim().to_owned());
        }
        let length = headers
            .get("content-length")
            .map_or(0, |v| v.parse().expect("a length"));
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).expect("body");
        RawReply {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    /// Whether the server closed the connection (reads end of stream).
    pub fn is_closed(&mut self) -> bool {
        let mut rest = Vec::new();
        matches!(self.reader.read_to_end(&mut rest), Ok(0))
    }
}

/// A keyed `POST /orders` as the demo merchant, with `Content-Length` as declared and
/// `body` as sent (they differ when a test wants a short body).
pub fn post_order(key: &str, body: &str, content_length: usize) -> String {
    format!(
        "POST /orders HTTP/1.1\r\nHost: idempay\r\nAuthorization: Bearer sk_test_demo\r\n\
         Idempotency-Key: {key}\r\nContent-Type: application/json\r\n\
         Content-Length: {content_length}\r\n\r\n{body}"
    )
}

/// A `GET` of `path` without credentials.
pub fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: idempay\r\n\r\n")
}
