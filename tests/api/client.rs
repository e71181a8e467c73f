//! The test client: speaks HTTP to one server (in process or a child process) as one
//! merchant, and reads the server's database for checks a client cannot make.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::time::Duration;

use serde_json::Value;

/// Speaks HTTP to one server as one merchant, and reads its database for checks.
#[derive(Debug, Clone)]
pub struct Client {
    pub base: String,
    pub api_key: String,
    pub database_url: String,
}

/// An HTTP response as a client sees it.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
    pub fn replayed(&self) -> bool {
        self.header("idempotent-replayed") == Some("true")
    }
    /// The problem's `code`, asserting the RFC 9457 media type.
    pub fn code(&self) -> String {
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "{}",
            self.text()
        );
        self.json()["code"]
            .as_str()
            .expect("problem has a code")
            .to_owned()
    }
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build()
}

fn into_reply(result: Result<ureq::Response, ureq::Error>) -> Reply {
    let response = match result {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("transport error: {e}"),
    };
    let status = response.status();
    let headers = response
        .headers_names()
        .into_iter()
        .map(|n| {
            let v = response.header(&n).unwrap_or_default().to_owned();
            (n.to_ascii_lowercase(), v)
        })
        .collect();
    let mut body = Vec::new();
    response
        .into_reader()
        .read_to_end(&mut body)
        .expect("body reads");
    Reply {
        status,
        headers,
        body,
    }
}

impl Client {
    /// A client of the server at `base` (as the demo merchant) on database `database_url`.
    pub fn new(base: String, database_url: &str) -> Self {
        Self {
            base,
            api_key: idempay::merchants::DEMO_API_KEY.to_owned(),
            database_url: database_url.to_owned(),
        }
    }

    /// A direct connection to the server's database, for checks a client cannot make.
    pub fn db(&self) -> idempay::db::DbConnection {
        let target = idempay::db::Target::parse(&self.database_url).expect("test URL parses");
        idempay::db::establish(&target).expect("test database connects")
    }

    /// How many charges (`kind` = `charge`) or refunds (`refund`) moved money: the
    /// simulated processor's ledger, read with the test's own SQL (never through
    /// idempay's queries, which a test must not trust to check idempay).
    pub fn settled(&self, kind: &str) -> i64 {
        assert!(matches!(kind, "charge" | "refund"), "a ledger kind");
        self.count(&format!(
            "SELECT COUNT(*) AS n FROM simulator_operations \
             WHERE kind = '{kind}' AND status = 'succeeded'"
        ))
    }

    /// The single number a `SELECT COUNT(*) AS n …` returns, on the server's database.
    pub fn count(&self, sql: &str) -> i64 {
        use diesel::prelude::*;
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        diesel::sql_query(sql)
            .get_result::<Count>(&mut self.db())
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .n
    }

    /// How many idempotency records are in `status`.
    pub fn records_in(&self, status: &str) -> i64 {
        use diesel::prelude::*;
        use idempay::db::schema::idempotency_records as records;
        records::table
            .filter(records::status.eq(status))
            .count()
            .get_result(&mut self.db())
            .expect("records readable")
    }

    /// How long the record of `key` is kept after it finished: `expires_at` less the
    /// moment it finished (`updated_at`), read from the database.
    pub fn record_ttl(&self, key: &str) -> chrono::TimeDelta {
        use diesel::prelude::*;
        use idempay::db::schema::idempotency_records as records;
        let (finished, expires): (chrono::NaiveDateTime, Option<chrono::NaiveDateTime>) =
            records::table
                .filter(records::idempotency_key.eq(key))
                .select((records::updated_at, records::expires_at))
                .first(&mut self.db())
                .expect("the record exists");
        expires.expect("a finished record expires") - finished
    }

    /// All idempotency records, of any status.
    pub fn record_count(&self) -> i64 {
        use diesel::prelude::*;
        use idempay::db::schema::idempotency_records as records;
        records::table
            .count()
            .get_result(&mut self.db())
            .expect("records readable")
    }

    /// A counter from `GET /metrics`.
    pub fn metric(&self, name: &str) -> u64 {
        let text = self.request("GET", "/metrics", &[], "").text();
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
            .unwrap_or_else(|| panic!("metric {name} missing: {text}"))
    }

    /// Like [`Client::post`], but a transport failure (the server died) is `None`.
    pub fn try_post(&self, path: &str, key: &str, body: &str) -> Option<Reply> {
        let request = agent()
            .post(&format!("{}{path}", self.base))
            .set("Authorization", &format!("Bearer {}", self.api_key))
            .set("Content-Type", "application/json")
            .set("Idempotency-Key", key);
        match request.send_string(body) {
            Ok(r) => Some(into_reply(Ok(r))),
            Err(ureq::Error::Status(c, r)) => Some(into_reply(Err(ureq::Error::Status(c, r)))),
            Err(_) => None,
        }
    }

    /// A keyed POST as the demo merchant with extra `headers`, giving up after `timeout`:
    /// `Err` with the transport failure (no answer, connection closed, timed out).
    pub fn send(
        &self,
        path: &str,
        key: &str,
        body: &str,
        headers: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<Reply, String> {
        let agent = ureq::AgentBuilder::new().timeout(timeout).build();
        let mut request = agent
            .post(&format!("{}{path}", self.base))
            .set("Authorization", &format!("Bearer {}", self.api_key))
            .set("Content-Type", "application/json")
            .set("Idempotency-Key", key);
        for (name, value) in headers {
            request = request.set(name, value);
        }
        match request.send_string(body) {
            Ok(r) => Ok(into_reply(Ok(r))),
            Err(ureq::Error::Status(c, r)) => Ok(into_reply(Err(ureq::Error::Status(c, r)))),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Runs `sql` (an UPDATE or DELETE) on the server's database; returns the rows changed.
    pub fn execute_sql(&self, sql: &str) -> usize {
        use diesel::RunQueryDsl;
        diesel::sql_query(sql)
            .execute(&mut self.db())
            .expect("test SQL runs")
    }

    /// POST a JSON body as the demo merchant, with `key` as Idempotency-Key if given.
    pub fn post(&self, path: &str, key: Option<&str>, body: &str) -> Reply {
        self.post_as(&self.api_key, path, key, body)
    }

    pub fn post_as(&self, api_key: &str, path: &str, key: Option<&str>, body: &str) -> Reply {
        let mut request = agent()
            .post(&format!("{}{path}", self.base))
            .set("Authorization", &format!("Bearer {api_key}"))
            .set("Content-Type", "application/json");
        if let Some(key) = key {
            request = request.set("Idempotency-Key", key);
        }
        into_reply(request.send_string(body))
    }

    /// Sends any request with exactly these headers (none added).
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut request = agent().request(method, &format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.set(name, value);
        }
        into_reply(request.send_string(body))
    }

    pub fn get(&self, path: &str) -> Reply {
        self.get_as(&self.api_key, path)
    }

    pub fn get_as(&self, api_key: &str, path: &str) -> Reply {
        let request = agent()
            .get(&format!("{}{path}", self.base))
            .set("Authorization", &format!("Bearer {api_key}"));
        into_reply(request.call())
    }

    /// Sends raw bytes on a fresh connection and returns the status code (for requests
    /// an HTTP client will not build, such as a header sent twice).
    pub fn raw_status(&self, request: &str) -> u16 {
        let mut stream = std::net::TcpStream::connect(self.base.trim_start_matches("http://"))
            .expect("connects");
        stream.write_all(request.as_bytes()).expect("writes");
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status line")
    }

    /// A second merchant; returns its API key.
    pub fn create_merchant(&self, name: &str) -> String {
        let target = idempay::db::Target::parse(&self.database_url).expect("test URL parses");
        let mut conn = idempay::db::establish(&target).expect("test database connects");
        idempay::merchants::create(&mut conn, name, idempay::api_keys::Mode::Live)
            .expect("merchant is created")
            .1
    }

    /// How many orders the demo merchant can list.
    pub fn order_count(&self) -> usize {
        let reply = self.get("/orders?limit=100");
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()["data"]
            .as_array()
            .expect("data is a list")
            .len()
    }

    /// Pays `order_id` with `method` under `key`.
    pub fn pay(&self, key: &str, order_id: &str, method: &str) -> Reply {
        let body = format!(r#"{{"order_id":"{order_id}","payment_method":"{method}"}}"#);
        self.post("/payments", Some(key), &body)
    }

    /// Creates an order of `amount` EUR and returns its id.
    pub fn order(&self, amount: i64) -> String {
        let key = uuid::Uuid::new_v4().to_string();
        let order = self.create_order(&key, &format!(r#"{{"amount":{amount},"currency":"EUR"}}"#));
        order["id"].as_str().expect("order id").to_owned()
    }

    /// Creates an order and returns its JSON.
    pub fn create_order(&self, key: &str, body: &str) -> Value {
        let reply = self.post("/orders", Some(key), body);
        assert_eq!(reply.status, 201, "{}", reply.text());
        reply.json()
    }
}
