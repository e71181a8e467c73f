//! Reading a validated request body: a JSON object whose members are checked one by
//! one, each failure a 422 `validation_failed` naming the member (`param`).
//!
//! Validation works on parsed values: `100`, `100.0` and `1e2` are one integer, `100.5`
//! is not an integer. String lengths count Unicode scalar values.

use serde_json::{Map, Value};

use crate::error::ApiError;

/// The members of a request body, with unknown members already refused.
pub struct Fields<'a> {
    members: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    /// Accepts `body` if it is an object whose members are all in `allowed`.
    pub fn new(body: &'a Value, allowed: &[&str]) -> Result<Self, ApiError> {
        let members = body
            .as_object()
            .ok_or_else(|| ApiError::invalid("body", "the request body must be a JSON object"))?;
        if let Some(unknown) = members
            .keys()
            .find(|name| !allowed.contains(&name.as_str()))
        {
            return Err(ApiError::invalid(unknown.clone(), "unknown field"));
        }
        Ok(Self { members })
    }

    /// A member's value; `null` counts as absent.
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.members.get(name).filter(|v| !v.is_null())
    }

    /// An optional integer member.
    pub fn integer(&self, name: &str) -> Result<Option<i64>, ApiError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        as_integer(value)
            .map(Some)
            .ok_or_else(|| ApiError::invalid(name, "must be an integer"))
    }

    /// An optional string member of at most `max_chars` characters.
    pub fn string(&self, name: &str, max_chars: usize) -> Result<Option<&'a str>, ApiError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let text = value
            .as_str()
            .ok_or_else(|| ApiError::invalid(name, "must be a string"))?;
        if text.contains('\0') {
            // PostgreSQL text cannot hold NUL; no backend may accept what another refuses.
            return Err(ApiError::invalid(
                name,
                "must not contain the NUL character (U+0000)",
            ));
        }
        if text.chars().count() > max_chars {
            return Err(ApiError::invalid(
                name,
                format!("must be at most {max_chars} characters"),
            ));
        }
        Ok(Some(text))
    }

    /// An optional object member.
    pub fn object(&self, name: &str) -> Result<Option<&'a Map<String, Value>>, ApiError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        value
            .as_object()
            .map(Some)
            .ok_or_else(|| ApiError::invalid(name, "must be an object"))
    }
}

/// A required member: `Err` 422 "is required" when absent.
pub fn required<T>(name: &str, value: Option<T>) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::invalid(name, "is required"))
}

/// The integer a JSON number denotes, if it has no fractional part (`1e2` is 100).
fn as_integer(value: &Value) -> Option<i64> {
    let number = value.as_number()?;
    if let Some(n) = number.as_i64() {
        return Some(n);
    }
    let f = number.as_f64()?;
    // |f| ≤ 2^53 was checked at parse time, so the cast is exact.
    (f.fract() == 0.0).then_some(f as i64)
}
