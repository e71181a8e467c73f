//! Number literals as the client wrote them. Every number in this API is an integer
//! (amounts in minor units), and a literal is one only if its exact decimal value is:
//! `100`, `100.0` and `1e2` are the integer 100, while `0.99999999999999999` is not an
//! integer at all, even though a JSON parser working in doubles reads it as 1. Parsed
//! values cannot tell those apart, so the raw body is read once more for its literals.

use crate::error::ApiError;

/// 422 `validation_failed` (with `param`, the member's path) for the first number
/// literal in `body` whose exact value is not an integer. `body` is JSON that parsed.
pub fn require_integer_literals(body: &[u8]) -> Result<(), ApiError> {
    let mut path: Vec<Segment> = Vec::new();
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'{' => path.push(Segment::Member(None)),
            b'[' => path.push(Segment::Index(0)),
            b'}' | b']' => drop(path.pop()),
            b',' => match path.last_mut() {
                Some(Segment::Index(n)) => *n += 1,
                Some(Segment::Member(name)) => *name = None,
                None => {}
            },
            b'"' => {
                let end = string_end(body, i);
                if let Some(Segment::Member(name @ None)) = path.last_mut() {
                    *name = serde_json::from_slice::<String>(&body[i..=end]).ok();
                }
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let end = number_end(body, i);
                let literal = std::str::from_utf8(&body[i..end]).unwrap_or_default();
                if !is_integer(literal) {
                    return Err(ApiError::invalid(
                        param(&path),
                        format!("must be an integer; the literal `{literal}` is not one"),
                    ));
                }
                i = end - 1;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

enum Segment {
    Member(Option<String>),
    Index(usize),
}

/// `amount`, or `metadata[cart]`, `items[0][price]` for nested members.
fn param(path: &[Segment]) -> String {
    let mut out = String::new();
    for (depth, segment) in path.iter().enumerate() {
        let name = match segment {
            Segment::Member(name) => name.clone().unwrap_or_default(),
            Segment::Index(n) => n.to_string(),
        };
        match depth {
            0 => out.push_str(&name),
            _ => out.push_str(&format!("[{name}]")),
        }
    }
    if out.is_empty() {
        "body".to_owned()
    } else {
        out
    }
}

/// The index of the quote that closes the string opened at `start`.
fn string_end(body: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < body.len() {
        match body[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
    body.len() - 1
}

/// The index just past the number literal starting at `start`.
fn number_end(body: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < body.len() && matches!(body[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
        i += 1;
    }
    i
}

/// Whether a JSON number literal's exact decimal value is an integer.
fn is_integer(literal: &str) -> bool {
    let unsigned = literal.trim_start_matches('-');
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
        None => (unsigned, 0),
    };
    let fraction = mantissa.split_once('.').map_or("", |(_, f)| f);
    // Digits below the units place once the exponent has moved the point.
    let below_units = fraction.len() as i64 - exponent;
    if below_units <= 0 {
        return true;
    }
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    let kept = digits.len().saturating_sub(below_units as usize);
    digits[kept..].iter().all(|&d| d == b'0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_integers_in_any_spelling_pass_and_rounded_ones_fail() {
        for ok in [
            "100", "-5", "100.0", "1e2", "1.5e1", "1E+2", "0", "-0.0", "12.500e2", "0.0e-7",
        ] {
            assert!(is_integer(ok), "{ok}");
        }
        for bad in [
            "0.99999999999999999",
            "999999999999.99999",
            "1999.9999999999999",
            "1.5",
            "15e-1",
            "1e-1",
            "2.0000000001",
        ] {
            assert!(!is_integer(bad), "{bad}");
        }
    }

    #[test]
    fn names_the_member_that_holds_the_literal() {
        let body = br#"{"currency":"EUR","amount":0.99999999999999999}"#;
        let Err(ApiError::Validation { param, .. }) = require_integer_literals(body) else {
            panic!("refused");
        };
        assert_eq!(param, "amount");
        let nested = br#"{"a":{"b\"c":[1,2.5]}}"#;
        let Err(ApiError::Validation { param, .. }) = require_integer_literals(nested) else {
            panic!("refused");
        };
        assert_eq!(param, "a[b\"c][1]");
        assert!(require_integer_literals(br#"{"x":"1.5","n":[100.0,1e2]}"#).is_ok());
    }
}
