//! Unit tests of the replay cache's edges: fingerprints, merchants, expiry, bounds.

use super::*;

fn request(merchant: &str, key: &str, fingerprint: &str) -> RequestIdentity {
    RequestIdentity {
        merchant_id: merchant.into(),
        key: key.into(),
        method: "POST".into(),
        path: "/orders".into(),
        fingerprint: fingerprint.into(),
        raw_digest: [fingerprint.len() as u8; 32],
        prefer_wait: None,
    }
}

fn response(body: &str) -> StoredResponse {
    StoredResponse {
        status: 201,
        body: body.as_bytes().to_vec(),
        content_type: "application/json".into(),
        location: Some("/orders/ord_1".into()),
        expires_at: None,
    }
}

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn replays_the_same_request_and_refuses_another_body() {
    let cache = ReplayCache::new(10, 1 << 20);
    cache.put(&request("mer_a", "k", "f1"), &response("{}"), HOUR);
    assert_eq!(
        cache.get(&request("mer_a", "k", "f1")),
        Some(Cached::Replay(response("{}")))
    );
    assert_eq!(
        cache.get(&request("mer_a", "k", "f2")),
        Some(Cached::Reused)
    );
}

#[test]
fn keys_are_scoped_to_their_merchant() {
    let cache = ReplayCache::new(10, 1 << 20);
    cache.put(&request("mer_a", "k", "f1"), &response("{}"), HOUR);
    assert_eq!(cache.get(&request("mer_b", "k", "f1")), None);
    assert_eq!(
        cache.get(&request("mer_b", "k", "f2")),
        None,
        "never 409 across merchants"
    );
}

#[test]
fn entries_expire_a_margin_before_their_record() {
    let cache = ReplayCache::new(10, 1 << 20);
    cache.put(&request("m", "short", "f"), &response("{}"), SAFETY_MARGIN);
    assert_eq!(
        cache.get(&request("m", "short", "f")),
        None,
        "too close to expiry to cache"
    );
    let soon = SAFETY_MARGIN + Duration::from_millis(30);
    cache.put(&request("m", "soon", "f"), &response("{}"), soon);
    assert!(cache.get(&request("m", "soon", "f")).is_some());
    std::thread::sleep(Duration::from_millis(40));
    assert_eq!(cache.get(&request("m", "soon", "f")), None, "expired");
    assert_eq!(cache.size(), (0, 0));
}

#[test]
fn holds_at_most_its_entries_and_bytes_dropping_the_oldest() {
    let cache = ReplayCache::new(3, 1 << 20);
    for key in ["a", "b", "c", "d"] {
        cache.put(&request("m", key, "f"), &response("{}"), HOUR);
    }
    assert_eq!(
        cache.get(&request("m", "a", "f")),
        None,
        "the oldest went first"
    );
    assert!(cache.get(&request("m", "d", "f")).is_some());
    assert_eq!(cache.size().0, 3);

    let body = "x".repeat(100);
    let small = ReplayCache::new(100, 300);
    for key in ["a", "b", "c"] {
        small.put(&request("m", key, "f"), &response(&body), HOUR);
    }
    let (entries, bytes) = small.size();
    assert!(
        bytes <= 300 && entries == 2,
        "{entries} entries, {bytes} bytes"
    );
    small.put(
        &request("m", "huge", "f"),
        &response(&"x".repeat(400)),
        HOUR,
    );
    assert_eq!(
        small.get(&request("m", "huge", "f")),
        None,
        "larger than the whole cache"
    );
}

#[test]
fn replacing_an_entry_keeps_one_and_the_queue_bounded() {
    let cache = ReplayCache::new(2, 1 << 20);
    for _ in 0..100 {
        cache.put(&request("m", "same", "f"), &response("{}"), HOUR);
    }
    cache.put(&request("m", "other", "f"), &response("{}"), HOUR);
    assert!(cache.get(&request("m", "same", "f")).is_some());
    assert!(cache.get(&request("m", "other", "f")).is_some());
    assert!(cache.inner.lock().order.len() <= 5);
    assert_eq!(
        ReplayCache::new(0, 1 << 20).get(&request("m", "same", "f")),
        None
    );
}

#[test]
fn the_same_bytes_replay_before_parsing_other_bytes_do_not() {
    let cache = ReplayCache::new(10, 1 << 20);
    let first = request("m", "k", "f1");
    cache.put(&first, &response("{}"), HOUR);
    assert_eq!(
        cache.get_unchanged("m", "k", &first.raw_digest),
        Some(response("{}"))
    );
    assert_eq!(
        cache.get_unchanged("m", "k", &[0; 32]),
        None,
        "other bytes: parse them"
    );
    assert_eq!(cache.get_unchanged("other", "k", &first.raw_digest), None);
}
