//! Resource ids: a prefix (`ord_`, `mer_`, …) and 32 lowercase hex digits of a UUIDv7,
//! so ids are fixed-width, single-case and sort by creation time in byte order.

/// Order ids.
pub const ORDER: &str = "ord_";
/// Payment ids.
pub const PAYMENT: &str = "pay_";
/// Refund ids.
pub const REFUND: &str = "re_";
/// Merchant ids.
pub const MERCHANT: &str = "mer_";
/// API key ids (never the key itself).
pub const API_KEY: &str = "key_";

/// A new id with `prefix`, sortable by creation time.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::now_v7().simple())
}

/// Whether `id` is well-formed for `prefix` (the prefix, then 32 lowercase hex digits).
pub fn is_well_formed(prefix: &str, id: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|body| {
        body.len() == 32
            && body
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_fixed_width_and_time_sortable() {
        let a = new_id(ORDER);
        let b = new_id(ORDER);
        assert!(is_well_formed(ORDER, &a) && a.len() == 36);
        assert!(a < b, "a later id sorts after an earlier one");
        assert!(!is_well_formed(ORDER, &a.to_uppercase()));
        assert!(!is_well_formed(ORDER, "ord_123"));
        assert!(!is_well_formed(MERCHANT, &a));
    }
}
