//! The `Idempotency-Key` request header: parsing and validation.
//!
//! Follows the IETF draft "The Idempotency-Key HTTP Header Field": the value is an
//! RFC 8941 sf-string, so `"K"` and the bare token `K` are the same key. idempay accepts
//! 1–255 characters of visible ASCII (0x21–0x7E), counted after unquoting.

use actix_web::http::header::HeaderMap;

use crate::error::ApiError;

/// The header's name.
pub const HEADER: &str = "Idempotency-Key";
/// The longest key accepted, in characters.
pub const MAX_LEN: usize = 255;

/// A validated idempotency key, unquoted: 1–255 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Reads the key from request headers. `Ok(None)` when the header is absent;
    /// 400 `invalid_idempotency_key` when it is sent twice, empty, too long, or holds
    /// other characters.
    pub fn from_headers(headers: &HeaderMap) -> Result<Option<Self>, ApiError> {
        let mut values = headers.get_all(HEADER);
        let Some(value) = values.next() else {
            return Ok(None);
        };
        if values.next().is_some() {
            return Err(invalid("the Idempotency-Key header must be sent once"));
        }
        Self::parse(value.as_bytes()).map(Some)
    }

    /// Parses one header value: a bare key, or an sf-string `"…"` with `\"` and `\\`
    /// escapes (RFC 8941 §3.3.3).
    pub fn parse(raw: &[u8]) -> Result<Self, ApiError> {
        let key = match raw.strip_prefix(b"\"") {
            Some(quoted) => unquote(quoted)?,
            None => raw.to_vec(),
        };
        if key.is_empty() {
            return Err(invalid("the Idempotency-Key header must not be empty"));
        }
        if key.len() > MAX_LEN {
            return Err(invalid(
                "the Idempotency-Key must be at most 255 characters",
            ));
        }
        if !key.iter().all(|b| (0x21..=0x7e).contains(b)) {
            return Err(invalid(
                "the Idempotency-Key may hold only visible ASCII characters (0x21-0x7E)",
            ));
        }
        let key = String::from_utf8(key).expect("visible ASCII is valid UTF-8");
        Ok(Self(key))
    }

    /// The key as stored and compared.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Unquotes the body of an sf-string (after its opening quote).
fn unquote(quoted: &[u8]) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::with_capacity(quoted.len());
    let mut bytes = quoted.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'\\' => match bytes.next() {
                Some(&escaped @ (b'"' | b'\\')) => out.push(escaped),
                _ => {
                    return Err(invalid(
                        "a quoted Idempotency-Key may escape only `\"` and `\\`",
                    ))
                }
            },
            b'"' if bytes.len() == 0 => return Ok(out),
            b'"' => {
                return Err(invalid(
                    "characters after the closing quote of the Idempotency-Key",
                ))
            }
            _ => out.push(b),
        }
    }
    Err(invalid("the quoted Idempotency-Key has no closing quote"))
}

fn invalid(detail: &str) -> ApiError {
    ApiError::InvalidIdempotencyKey(detail.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(raw: &str) -> Result<String, ApiError> {
        IdempotencyKey::parse(raw.as_bytes()).map(|k| k.0)
    }

    #[test]
    fn bare_and_quoted_forms_are_one_key() {
        assert_eq!(key("order-1").unwrap(), "order-1");
        assert_eq!(key("\"order-1\"").unwrap(), "order-1");
        assert_eq!(key(r#""a\"b\\c""#).unwrap(), r#"a"b\c"#);
    }

    #[test]
    fn length_is_counted_after_unquoting() {
        let max = "k".repeat(255);
        assert!(key(&max).is_ok());
        assert!(key(&format!("\"{max}\"")).is_ok());
        assert!(key(&"k".repeat(256)).is_err());
        assert!(key(&format!("\"{}\"", "k".repeat(256))).is_err());
    }

    #[test]
    fn rejects_empty_unterminated_and_invisible() {
        for bad in [
            "",
            "\"\"",
            "\"abc",
            "\"a\"b\"",
            "a b",
            "tab\there",
            "caf\u{e9}",
            r#""a\n""#,
        ] {
            assert!(key(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(key("!~").is_ok());
    }
}
