//! Many instances, one PostgreSQL database (SQLite is one file on one machine, so this
//! is PostgreSQL's story): two server processes, both reapers running, 200 requests over
//! 10 keys spread across both → exactly 10 payments and 10 charges.

use std::time::Duration;

use crate::helpers::{eventually, Backend};
use crate::pg::TestDb;
use crate::process::serve;

fn two_instances_share_one_database(backend: Backend) {
    let Some(db) = TestDb::create(backend) else {
        return;
    };
    let servers = [serve(&db.url, &[]), serve(&db.url, &[])];
    let orders: Vec<String> = (0..10).map(|_| servers[0].client.order(1000)).collect();
    let clients = [servers[0].client.clone(), servers[1].client.clone()];
    let method = |key: usize| {
        if key < 5 {
            "pm_card_visa"
        } else {
            "pm_card_timeout"
        }
    };
    let replies: Vec<(usize, u16, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..20)
            .map(|t| {
                let (clients, orders) = (&clients, &orders);
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
                            (key, reply.status, code)
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
    for (key, status, code) in &replies {
        let documented = matches!(
            (*status, code.as_str()),
            (201, _) | (409, "idempotency_key_in_use") | (503, "processor_timeout")
        );
        assert!(documented, "key {key}: {status} {code}");
    }
    let client = &servers[1].client;
    eventually(Duration::from_secs(30), || {
        (client.records_in("processing") == 0).then_some(())
    });
    for (key, order) in orders.iter().enumerate() {
        let retry = client.pay(&format!("key-{key}"), order, method(key));
        assert_eq!(retry.status, 201, "key {key}: {}", retry.text());
        assert_eq!(
            client.get(&format!("/orders/{order}")).json()["status"],
            "paid"
        );
    }
    let payments = client.get("/payments?limit=100").json();
    assert_eq!(
        payments["data"].as_array().unwrap().len(),
        10,
        "exactly 10 effects"
    );
    assert_eq!(client.settled("charge"), 10, "one charge per key");
    let recovered: u64 = servers
        .iter()
        .map(|s| s.client.metric("idempay_reaper_recovered_total"))
        .sum();
    assert!(
        recovered <= 5,
        "only the 5 lost answers could need recovery: {recovered}"
    );
}

mod postgres {
    #[test]
    fn two_instances_share_one_database() {
        super::two_instances_share_one_database(crate::helpers::Backend::Postgres)
    }
}
