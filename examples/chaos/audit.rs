//! The audit after each scenario, read straight from the database with SQL of its own
//! (never through idempay's queries): one effect per key, the money adds up, the
//! simulator's ledger matches, and nothing is left `processing`.

use diesel::prelude::*;
use diesel::sql_types::BigInt;
use idempay::db::{self, DbConnection, Target};

use crate::load::Kind;
use crate::workload::Journal;

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

fn count(conn: &mut DbConnection, sql: &str) -> i64 {
    diesel::sql_query(sql)
        .get_result::<Count>(conn)
        .unwrap_or_else(|e| panic!("audit query failed: {e}: {sql}"))
        .n
}

/// Every invariant, each as `(what, how many rows break it)`; an empty list is a pass.
const INVARIANTS: [(&str, &str); 9] = [
    (
        "orders whose amount_paid is not the sum of their succeeded payments",
        "SELECT COUNT(*) AS n FROM orders o WHERE o.amount_paid <> (SELECT COALESCE(SUM(p.amount), 0) FROM payments p WHERE p.order_id = o.id AND p.status = 'succeeded')",
    ),
    (
        "orders whose amount_refunded is not the sum of their succeeded refunds",
        "SELECT COUNT(*) AS n FROM orders o WHERE o.amount_refunded <> (SELECT COALESCE(SUM(r.amount), 0) FROM refunds r JOIN payments p ON p.id = r.payment_id WHERE p.order_id = o.id AND r.status = 'succeeded')",
    ),
    (
        "payments whose amount_refunded is not the sum of their succeeded refunds",
        "SELECT COUNT(*) AS n FROM payments p WHERE p.amount_refunded <> (SELECT COALESCE(SUM(r.amount), 0) FROM refunds r WHERE r.payment_id = p.id AND r.status = 'succeeded')",
    ),
    (
        "payments still holding a refund reservation",
        "SELECT COUNT(*) AS n FROM payments WHERE amount_reserved <> 0",
    ),
    (
        "orders paid more than once",
        "SELECT COUNT(*) AS n FROM (SELECT order_id FROM payments WHERE status = 'succeeded' GROUP BY order_id HAVING COUNT(*) > 1) twice",
    ),
    (
        "succeeded payments or refunds without a matching ledger entry (kind, amount)",
        "SELECT COUNT(*) AS n FROM (SELECT processor_key, amount, 'charge' AS kind FROM payments WHERE status = 'succeeded' UNION ALL SELECT processor_key, amount, 'refund' FROM refunds WHERE status = 'succeeded') moved WHERE NOT EXISTS (SELECT 1 FROM simulator_operations s WHERE s.processor_key = moved.processor_key AND s.kind = moved.kind AND s.amount = moved.amount AND s.status = 'succeeded')",
    ),
    (
        "ledger entries that moved money for no succeeded payment or refund",
        "SELECT COUNT(*) AS n FROM simulator_operations s WHERE s.status = 'succeeded' AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.processor_key = s.processor_key AND p.status = 'succeeded') AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.processor_key = s.processor_key AND r.status = 'succeeded')",
    ),
    (
        "payments or refunds still processing",
        "SELECT COUNT(*) AS n FROM (SELECT id FROM payments WHERE status = 'processing' UNION ALL SELECT id FROM refunds WHERE status = 'processing') open",
    ),
    (
        "idempotency records still processing",
        "SELECT COUNT(*) AS n FROM idempotency_records WHERE status = 'processing'",
    ),
];

/// Rows of `table` (`orders`, `payments`, `refunds`).
fn rows(conn: &mut DbConnection, table: &str) -> i64 {
    count(conn, &format!("SELECT COUNT(*) AS n FROM {table}"))
}

/// Audits the database at `database_url` against the journal; returns what failed.
pub fn audit(database_url: &str, journal: &Journal) -> Vec<String> {
    let target = Target::parse(database_url).expect("audit URL parses");
    let mut conn = db::establish(&target).expect("audit connects");
    let mut failures: Vec<String> = INVARIANTS
        .iter()
        .filter_map(|(what, sql)| match count(&mut conn, sql) {
            0 => None,
            n => Some(format!("{n} {what}")),
        })
        .collect();
    let entries = journal.0.lock().expect("journal lock");
    for (kind, table) in [
        (Kind::Order, "orders"),
        (Kind::Pay, "payments"),
        (Kind::Refund, "refunds"),
    ] {
        // Every key reached a final answer (or the scenario recorded a violation), and
        // every key made exactly one row: one effect per key.
        let keys = entries.iter().filter(|(op, _)| op.kind == kind).count() as i64;
        let made = rows(&mut conn, table);
        if made != keys {
            failures.push(format!("{keys} {table} keys made {made} {table}"));
        }
        let answered_ids: std::collections::HashSet<String> = entries
            .iter()
            .filter(|(op, _)| op.kind == kind)
            .filter_map(|(_, answer)| answer.as_ref())
            .filter_map(|a| a.body["id"].as_str().or(a.body["payment_id"].as_str()))
            .map(str::to_owned)
            .collect();
        let answered = entries
            .iter()
            .filter(|(op, a)| op.kind == kind && a.is_some())
            .count();
        if answered_ids.len() != answered {
            failures.push(format!(
                "{answered} final {table} answers name {} distinct ids",
                answered_ids.len()
            ));
        }
    }
    failures
}

/// How many `processing` records are past their lease by more than `slack` now (by the
/// database's clock): what the reaper should have resolved already.
pub fn overdue(database_url: &str, slack: chrono::TimeDelta) -> i64 {
    use idempay::db::schema::idempotency_records as records;
    let target = Target::parse(database_url).expect("audit URL parses");
    let Ok(mut conn) = db::establish(&target) else {
        return 0; // the database is down: nothing can be resolved now
    };
    let Ok(now) = db::now(&mut conn) else {
        return 0;
    };
    records::table
        .filter(records::status.eq("processing"))
        .filter(records::locked_until.lt(now - slack))
        .count()
        .get_result(&mut conn)
        .unwrap_or(0)
}
