//! Many instances, one PostgreSQL database (SQLite is one file on one machine, so this
//! is PostgreSQL's story). Two server processes take 200 requests over 10 keys spread
//! across both: no key executes twice, and the ledger (read with SQL) holds exactly one
//! charge per key. Then a third instance dies mid-payment and one of the others' reapers
//! must resolve its record.

use std::time::Duration;

use crate::helpers::{eventually, Backend, Client};
use crate::pause::Pause;
use crate::pg::TestDb;
use crate::process::serve;

/// 200 concurrent payments over 10 keys; returns, per key, how many answers executed
/// (a 201 that was not a replay).
fn storm(
    clients: &[Client; 2],
    orders: &[String],
    method: impl Fn(usize) -> &'static str + Sync,
) -> Vec<usize> {
    let replies: Vec<(usize, u16, String, bool)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..20)
            .map(|t| {
                let method = &method;
                s.spawn(move || {
                    let key = t % 10;
                    (0..10)
                        .map(|i| {
                            let client = &clients[(t + i) % 2];
                            let reply =
                                client.pay(&format!("key-{key}"), &orders[key], method(key));
                            let code = if reply.status >= 400 {
                                reply.code()
                            } else {
                                String::new()
                            };
                            (key, reply.status, code, reply.replayed())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(replies.len(), 200);
    let mut executed = vec![0; orders.len()];
    for (key, status, code, replayed) in &replies {
        let documented = matches!(
            (*status, code.as_str()),
            (201, _) | (409, "idempotency_key_in_use") | (503, "processor_timeout")
        );
        assert!(documented, "key {key}: {status} {code}");
        if *status == 201 && !replayed {
            executed[*key] += 1;
        }
    }
    executed
}

fn two_instances_share_one_database(backend: Backend) {
    let db = TestDb::create(backend);
    let reaper = ["--reaper-interval-secs", "1"];
    let servers = [serve(&db.url, &reaper), serve(&db.url, &reaper)];
    let orders: Vec<String> = (0..11).map(|_| servers[0].client.order(1000)).collect();
    let clients = [servers[0].client.clone(), servers[1].client.clone()];
    let method = |key: usize| {
        if key < 5 {
            "pm_card_visa"
        } else {
            "pm_card_timeout"
        }
    };
    let executed = storm(&clients, &orders[..10], method);
    assert!(
        executed.iter().all(|&n| n <= 1),
        "a key executed twice: {executed:?}"
    );
    let client = &clients[1];
    for (key, order) in orders[..10].iter().enumerate() {
        let retry = eventually(Duration::from_secs(30), || {
            let reply = client.pay(&format!("key-{key}"), order, method(key));
            (reply.status != 409).then_some(reply)
        });
        assert_eq!(retry.status, 201, "key {key}: {}", retry.text());
    }
    let one_charge_per_payment = "SELECT COUNT(*) AS n FROM payments p \
        JOIN simulator_operations s ON s.processor_key = p.processor_key \
        WHERE p.status = 'succeeded' AND s.kind = 'charge' AND s.status = 'succeeded'";
    assert_eq!(
        client.count("SELECT COUNT(*) AS n FROM payments"),
        10,
        "10 effects"
    );
    assert_eq!(client.settled("charge"), 10, "one charge per key");
    assert_eq!(client.count(one_charge_per_payment), 10);

    // A third instance dies mid-payment: the running instances' reapers must resolve it.
    let recovered = || -> u64 {
        servers
            .iter()
            .map(|s| s.client.metric("idempay_reaper_recovered_total"))
            .sum()
    };
    let before = recovered();
    let pause = Pause::at("payment_created");
    let third = serve(
        &db.url,
        &pause.args().iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let (dying, order) = (third.client.clone(), orders[10].clone());
    let request =
        std::thread::spawn(move || dying.try_post("/payments", "key-10", &pay_body(&order)));
    pause.wait_paused();
    third.kill();
    assert!(
        request.join().unwrap().is_none(),
        "the connection died with the instance"
    );
    eventually(Duration::from_secs(30), || {
        (recovered() > before).then_some(())
    });
    assert_eq!(client.records_in("processing"), 0);
    assert_eq!(
        recovered() - before,
        1,
        "a running instance resumed the dead one's payment"
    );
    let retry = client.post("/payments", Some("key-10"), &pay_body(&orders[10]));
    assert_eq!(
        (retry.status, retry.replayed()),
        (201, true),
        "{}",
        retry.text()
    );
    assert_eq!(client.settled("charge"), 11);
    assert_eq!(client.count(one_charge_per_payment), 11);
}

fn pay_body(order: &str) -> String {
    format!(r#"{{"order_id":"{order}","payment_method":"pm_card_visa"}}"#)
}

crate::postgres_only!(two_instances_share_one_database);
