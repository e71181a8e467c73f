//! Unit tests of the fingerprint: RFC 8785's published vectors and the ambiguity checks.

use super::*;

fn jcs(text: &str) -> String {
    String::from_utf8(canonical_json(&parse_strict(text.as_bytes()).unwrap())).unwrap()
}

#[test]
fn rfc8785_section_3_2_2_example() {
    // RFC 8785 §3.2.2: the sample input and its canonical output.
    let input = r#"{
        "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
    }"#;
    // 1E30 is beyond 2^53, so idempay refuses it; the rest of the vector is checked below.
    assert!(parse_strict(input.as_bytes()).is_err());
    let input = input.replace("1E30, ", "");
    assert_eq!(
        jcs(&input),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

#[test]
fn rfc8785_section_3_2_3_sorting() {
    // RFC 8785 §3.2.3: members sorted by their UTF-16 code units.
    let input = r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#;
    assert_eq!(
        jcs(input),
        "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}"
    );
}

#[test]
fn rfc8785_appendix_b_numbers() {
    // RFC 8785 Appendix B: IEEE 754 doubles and their canonical spelling.
    for (input, expected) in [
        ("0", "0"),
        ("-0", "0"),
        ("5e-324", "5e-324"),
        ("1e+21", "error"), // beyond 2^53: refused
        ("9007199254740992", "9007199254740992"),
        ("999999999999999.9", "999999999999999.9"),
        ("0.000001", "0.000001"),
        ("1e-7", "1e-7"),
        ("295147905179352830000", "error"),
    ] {
        let parsed = parse_strict(input.as_bytes());
        if expected == "error" {
            assert!(parsed.is_err(), "{input} is beyond 2^53");
        } else {
            assert_eq!(
                String::from_utf8(canonical_json(&parsed.unwrap())).unwrap(),
                expected
            );
        }
    }
}

#[test]
fn order_whitespace_and_number_spelling_do_not_matter() {
    let a = fingerprint(
        "POST",
        "/orders",
        Some(&parse_strict(br#"{"amount":100,"currency":"EUR"}"#).unwrap()),
    );
    for same in [
        r#"{ "currency" : "EUR",
             "amount" : 100 }"#,
        r#"{"amount":100.0,"currency":"EUR"}"#,
        r#"{"amount":1e2,"currency":"EUR"}"#,
    ] {
        let b = fingerprint(
            "POST",
            "/orders",
            Some(&parse_strict(same.as_bytes()).unwrap()),
        );
        assert_eq!(a, b, "{same}");
    }
    let other = parse_strict(br#"{"amount":101,"currency":"EUR"}"#).unwrap();
    assert_ne!(a, fingerprint("POST", "/orders", Some(&other)));
    let same_body = parse_strict(br#"{"amount":100,"currency":"EUR"}"#).unwrap();
    assert_ne!(a, fingerprint("POST", "/payments", Some(&same_body)));
}

#[test]
fn nfc_and_nfd_text_differ() {
    let nfc = parse_strict("{\"d\":\"caf\u{e9}\"}".as_bytes()).unwrap();
    let nfd = parse_strict("{\"d\":\"cafe\u{301}\"}".as_bytes()).unwrap();
    assert_ne!(
        fingerprint("POST", "/orders", Some(&nfc)),
        fingerprint("POST", "/orders", Some(&nfd))
    );
}

#[test]
fn ambiguous_documents_are_refused() {
    for bad in [
        r#"{"amount":1,"amount":2}"#,
        r#"{"a":{"b":1,"b":1}}"#,
        r#"{"amount":9007199254740993}"#,
        r#"{"amount":-9007199254740993}"#,
        r#"{"amount":1e300}"#,
    ] {
        assert!(
            matches!(
                parse_strict(bad.as_bytes()),
                Err(ApiError::AmbiguousJson(_))
            ),
            "{bad}"
        );
    }
    assert!(matches!(
        parse_strict(b"{\"a\":"),
        Err(ApiError::InvalidJson(_))
    ));
    assert!(matches!(
        parse_strict(b"{} x"),
        Err(ApiError::InvalidJson(_))
    ));
    assert!(parse_strict(br#"{"amount":9007199254740992}"#).is_ok());
}

#[test]
fn null_members_are_absent_members() {
    let fp = |text: &str| {
        fingerprint(
            "POST",
            "/payments/x/refunds",
            Some(&parse_strict(text.as_bytes()).unwrap()),
        )
    };
    assert_eq!(fp(r#"{"amount":null}"#), fp("{}"));
    assert_eq!(fp(r#"{"a":{"b":null,"c":1}}"#), fp(r#"{"a":{"c":1}}"#));
    assert_ne!(fp(r#"{"amount":0}"#), fp("{}"));
    assert_ne!(fp("[null]"), fp("[]"));
}
