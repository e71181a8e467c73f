//! Concurrency: C06 (in-flight duplicates with a slow card), C08 (one key on two
//! endpoints), C10 for payments, and the invariants that hold without keys (one payment
//! per order, refunds never exceed the payment).

use crate::helpers::{eventually, spawn_app, spawn_app_with, Backend, Reply};
use crate::pause::Pause;

fn c06_in_flight_duplicates_with_a_slow_card(backend: Backend) {
    let pause = Pause::at("before_charge");
    let app = spawn_app_with(backend, |c| pause.configure(c));
    let order = app.order(2500);
    // A is in flight (held right before its charge, the lease renewed); B and C arrive.
    let winner = std::thread::scope(|s| {
        let a = s.spawn(|| app.pay("K6", &order, "pm_card_slow"));
        pause.wait_paused();
        let duplicates: Vec<Reply> = std::thread::scope(|s| {
            let b = s.spawn(|| app.pay("K6", &order, "pm_card_slow"));
            let c = s.spawn(|| app.pay("K6", &order, "pm_card_slow"));
            [b, c].into_iter().map(|h| h.join().unwrap()).collect()
        });
        for loser in &duplicates {
            assert_eq!(loser.code(), "idempotency_key_in_use");
            assert!(loser.header("retry-after").is_some());
        }
        pause.release();
        a.join().unwrap()
    });
    assert_eq!(
        (winner.status, winner.replayed()),
        (201, false),
        "{}",
        winner.text()
    );
    let other_body = app.post(
        "/payments",
        Some("K6"),
        &format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa"}}"#),
    );
    assert_eq!(other_body.code(), "idempotency_key_reused");
    let replay = app.pay("K6", &order, "pm_card_slow");
    assert!(replay.replayed());
    assert_eq!(replay.body, winner.body);
    assert_eq!(
        app.get(&format!("/payments?order_id={order}")).json()["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(app.settled("charge"), 1);
}

fn c08_one_key_on_two_endpoints(backend: Backend) {
    let app = spawn_app(backend);
    let order = app.order(900);
    let (o, p) = std::thread::scope(|s| {
        let o = s.spawn(|| app.post("/orders", Some("K9"), r#"{"amount":900,"currency":"EUR"}"#));
        let p = s.spawn(|| app.pay("K9", &order, "pm_card_visa"));
        (o.join().unwrap(), p.join().unwrap())
    });
    let (winner, loser, retry) = if o.status == 201 {
        (
            o,
            p,
            app.post("/orders", Some("K9"), r#"{"amount":900,"currency":"EUR"}"#),
        )
    } else {
        (p, o, app.pay("K9", &order, "pm_card_visa"))
    };
    assert_eq!(winner.status, 201, "{}", winner.text());
    assert_eq!(loser.code(), "idempotency_key_reused", "{}", loser.text());
    assert!(retry.replayed());
    assert_eq!(retry.body, winner.body, "the winner's own response");
}

fn c10_payment_keys_are_scoped_to_the_merchant(backend: Backend) {
    let app = spawn_app(backend);
    let other = app.create_merchant("B");
    let order = app.order(700);
    let a = app.pay("K16", &order, "pm_card_visa");
    let pa = a.json()["id"].as_str().unwrap().to_owned();
    let body = format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa"}}"#);
    let b = app.post_as(&other, "/payments", Some("K16"), &body);
    assert_eq!(
        (b.status, b.replayed()),
        (404, false),
        "B cannot pay A's order: {}",
        b.text()
    );
    assert!(!b.text().contains(&pa));
    assert!(app.pay("K16", &order, "pm_card_visa").replayed());
    assert_eq!(app.get_as(&other, &format!("/payments/{pa}")).status, 404);
    assert_eq!(
        app.get_as(&other, "/payments").json()["data"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

fn payment_in_progress_blocks_other_keys_and_cancel(backend: Backend) {
    let pause = Pause::at("before_charge");
    let app = spawn_app_with(backend, |c| pause.configure(c));
    let order = app.order(1500);
    std::thread::scope(|s| {
        let slow = s.spawn(|| app.pay("slow", &order, "pm_card_visa"));
        pause.wait_paused(); // the payment is `processing`, its charge not yet sent
        let other = app.pay("other", &order, "pm_card_visa");
        assert_eq!(
            (other.status, other.code().as_str()),
            (409, "payment_in_progress")
        );
        assert_eq!(other.header("retry-after"), Some("1"));
        let cancel = app.post(&format!("/orders/{order}/cancel"), None, "");
        assert_eq!(
            (cancel.status, cancel.code().as_str()),
            (409, "payment_in_progress")
        );
        let listed = app.get(&format!("/payments?order_id={order}")).json();
        let in_flight = listed["data"][0]["id"].as_str().unwrap().to_owned();
        let refund = app.post(
            &format!("/payments/{in_flight}/refunds"),
            Some("early"),
            "{}",
        );
        assert_eq!(
            (refund.status, refund.code().as_str()),
            (409, "payment_in_progress")
        );
        pause.release();
        assert_eq!(slow.join().unwrap().status, 201);
        // The retryable failure executes again and now meets the paid order.
        let retried = app.pay("other", &order, "pm_card_visa");
        assert_eq!(
            (retried.status, retried.code().as_str()),
            (409, "order_not_payable")
        );
    });
    assert_eq!(app.settled("charge"), 1);
}

fn twenty_concurrent_refunds_never_exceed_the_payment(backend: Backend) {
    let app = spawn_app(backend);
    let order = app.order(1000);
    let payment = app.pay("p", &order, "pm_card_visa").json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/payments/{payment}/refunds");
    let barrier = std::sync::Barrier::new(20);
    let replies: Vec<Reply> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..20)
            .map(|i| {
                let (path, barrier, app) = (&path, &barrier, &app);
                s.spawn(move || {
                    barrier.wait();
                    app.post(path, Some(&format!("refund-{i}")), r#"{"amount":150}"#)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // While others are in flight a refund that does not fit now may fit later: it is
    // told to retry (refund_in_progress); once all have settled, the answer is final.
    for r in replies.iter().filter(|r| r.status != 201) {
        let code = r.code();
        assert!(
            matches!(
                code.as_str(),
                "refund_exceeds_payment" | "refund_in_progress"
            ),
            "{}",
            r.text()
        );
    }
    let finals: Vec<Reply> = (0..20)
        .map(|i| {
            let key = format!("refund-{i}");
            eventually(std::time::Duration::from_secs(20), || {
                let reply = app.post(&path, Some(&key), r#"{"amount":150}"#);
                (reply.status == 201 || reply.code() == "refund_exceeds_payment").then_some(reply)
            })
        })
        .collect();
    let ok = finals.iter().filter(|r| r.status == 201).count();
    assert_eq!(ok, 6, "6 × 150 ≤ 1000 < 7 × 150");
    let refunded = app.get(&format!("/payments/{payment}")).json()["amount_refunded"]
        .as_i64()
        .unwrap();
    assert_eq!(refunded, 900);
    assert_eq!(
        app.get(&format!("/orders/{order}")).json()["amount_refunded"],
        900
    );
    assert_eq!(app.settled("refund"), 6);
}

fn twenty_concurrent_payments_with_different_keys_pay_once(backend: Backend) {
    let app = spawn_app(backend);
    let order = app.order(1000);
    let barrier = std::sync::Barrier::new(20);
    let replies: Vec<Reply> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..20)
            .map(|i| {
                let (order, barrier, app) = (&order, &barrier, &app);
                s.spawn(move || {
                    barrier.wait();
                    app.pay(&format!("k-{i}"), order, "pm_card_visa")
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(replies.iter().filter(|r| r.status == 201).count(), 1);
    for r in replies.iter().filter(|r| r.status != 201) {
        assert!(
            matches!(
                r.code().as_str(),
                "payment_in_progress" | "order_not_payable"
            ),
            "{}",
            r.text()
        );
    }
    assert_eq!(app.settled("charge"), 1);
}

crate::on_both_backends!(
    c06_in_flight_duplicates_with_a_slow_card,
    c08_one_key_on_two_endpoints,
    c10_payment_keys_are_scoped_to_the_merchant,
    payment_in_progress_blocks_other_keys_and_cancel,
    twenty_concurrent_refunds_never_exceed_the_payment,
    twenty_concurrent_payments_with_different_keys_pay_once,
);
