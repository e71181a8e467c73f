//! The domain: money, orders, payments and refunds, their rules, and resource ids. No I/O.

pub mod fields;
pub mod ids;
pub mod literals;
pub mod money;
pub mod order;
pub mod payment;

use chrono::NaiveDateTime;
use serde::Serializer;

/// Serialises a UTC timestamp as RFC 3339 with microseconds, e.g.
/// `2026-11-30T01:48:21.123456Z`.
pub fn rfc3339<S: Serializer>(at: &NaiveDateTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(
        &at.and_utc()
            .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
    )
}
