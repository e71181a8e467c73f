//! The request fingerprint: SHA-256 over the method, the path and the RFC 8785 (JCS)
//! canonical form of the JSON body.
//!
//! Member order, whitespace and number spelling (`100`, `100.0`, `1e2`) do not change the
//! fingerprint; any change of value does. Bodies that two parsers could read differently
//! are refused before hashing: duplicate member names (the canonicaliser would silently
//! keep the last) and numbers beyond ±2^53 (they would be rounded to a double).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// 2^53: the largest magnitude every JSON parser represents exactly (RFC 8785 §3.2.2.3).
const MAX_EXACT_INTEGER: u64 = 1 << 53;

/// Parses a request body as JSON, refusing ambiguous documents.
///
/// Errors: 400 `invalid_json` for a syntax error, 400 `ambiguous_json` for a duplicate
/// member name or a number beyond ±2^53.
pub fn parse_strict(body: &[u8]) -> Result<Value, ApiError> {
    match serde_json::from_slice::<Strict>(body) {
        Ok(Strict(value)) => Ok(value),
        Err(e) if e.is_data() => Err(ApiError::AmbiguousJson(e.to_string())),
        Err(e) => Err(ApiError::InvalidJson(e.to_string())),
    }
}

/// The RFC 8785 canonical bytes of a JSON value.
pub fn canonical_json(value: &Value) -> Vec<u8> {
    serde_json_canonicalizer::to_vec(value)
        .expect("a Value parsed by parse_strict holds only finite numbers, so it canonicalises")
}

/// A request fingerprint: lowercase hex SHA-256 of `METHOD \n PATH \n JCS(body)`, where
/// object members whose value is `null` are left out first (the API reads a `null`
/// member as an absent one, so both spellings are one request). A request without a
/// body hashes an empty canonical form.
pub fn fingerprint(method: &str, path: &str, body: Option<&Value>) -> String {
    let mut hash = Sha256::new();
    hash.update(method.as_bytes());
    hash.update(b"\n");
    hash.update(path.as_bytes());
    hash.update(b"\n");
    match body {
        Some(body) if has_null_member(body) => hash.update(canonical_json(&without_nulls(body))),
        Some(body) => hash.update(canonical_json(body)),
        None => {}
    }
    format!("{:x}", hash.finalize())
}

/// Whether an object anywhere in `value` has a member whose value is `null`.
fn has_null_member(value: &Value) -> bool {
    match value {
        Value::Object(members) => members.values().any(|v| v.is_null() || has_null_member(v)),
        Value::Array(items) => items.iter().any(has_null_member),
        _ => false,
    }
}

/// `value` with every object member whose value is `null` removed, at any depth.
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// A JSON value deserialised with the ambiguity checks.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        if n > MAX_EXACT_INTEGER {
            return Err(E::custom(format!("number {n} is beyond ±2^53")));
        }
        Ok(Value::Number(n.into()))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        if n.unsigned_abs() > MAX_EXACT_INTEGER {
            return Err(E::custom(format!("number {n} is beyond ±2^53")));
        }
        Ok(Value::Number(n.into()))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        if n.abs() > MAX_EXACT_INTEGER as f64 {
            return Err(E::custom(format!("number {n} is beyond ±2^53")));
        }
        Number::from_f64(n)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number is not finite"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(name) = map.next_key::<String>()? {
            let Strict(value) = map.next_value()?;
            if members.insert(name.clone(), value).is_some() {
                return Err(de::Error::custom(format!("duplicate member name `{name}`")));
            }
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
#[path = "fingerprint_tests.rs"]
mod tests;
