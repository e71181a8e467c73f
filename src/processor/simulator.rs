//! The simulated processor. Its ledger lives in the shared database
//! (`simulator_operations`, unique on the processor key), so it is idempotent across
//! instances. Test payment methods make every path reachable on demand:
//!
//! | method | answer |
//! |---|---|
//! | `pm_card_visa` | succeeds |
//! | `pm_card_declined` | declined, `card_declined` |
//! | `pm_card_insufficient_funds` | declined, `insufficient_funds` |
//! | `pm_card_processor_down` | unavailable (retryable), nothing charged, every time |
//! | `pm_card_flaky` | unavailable on the first call for a key, succeeds after |
//! | `pm_card_timeout` | the first call for a key charges but the answer is lost; later calls return the charge |
//! | `pm_card_slow` | succeeds after the configured delay |
//!
//! Refunds follow the method of the payment they refund (a flaky card's refund is flaky).
//! A call that lands after its `deadline` (the caller's lease) is refused, unrecorded.

use std::time::Duration;

use diesel::prelude::*;

use super::{Operation, Outcome, PaymentProcessor, ProcessorError};
use crate::db::schema::simulator_operations as ops;
use crate::db::{self, DbConnection, DbPool};
use crate::error::ApiError;

/// The simulator: a database ledger and configurable latencies.
#[derive(Clone)]
pub struct Simulator {
    pool: DbPool,
    /// Added to every call.
    pub latency: Duration,
    /// How long `pm_card_slow` takes.
    pub slow: Duration,
}

/// What one call did to the ledger, decided inside one transaction.
enum Answer {
    Done(Outcome),
    Unavailable,
    /// Money moved but the answer is lost (first `pm_card_timeout` call).
    Lost,
}

impl Simulator {
    pub fn new(pool: DbPool, latency: Duration, slow: Duration) -> Self {
        Self {
            pool,
            latency,
            slow,
        }
    }

    async fn call(&self, kind: &'static str, op: Operation) -> Result<Outcome, ProcessorError> {
        let mut wait = self.latency;
        if op.payment_method == "pm_card_slow" {
            wait += self.slow;
        }
        if !wait.is_zero() {
            tokio::time::sleep(wait).await; // never blocks a worker thread
        }
        let answer = db::run(&self.pool, move |conn| Ok(record(conn, kind, &op)?)).await;
        match answer {
            Ok(Answer::Done(outcome)) => Ok(outcome),
            Ok(Answer::Unavailable) => Err(ProcessorError::Unavailable),
            Ok(Answer::Lost) => Err(ProcessorError::Timeout),
            // The simulator's own store failed: from the caller's side, no answer came.
            Err(ApiError::Database(_)) | Err(_) => Err(ProcessorError::Timeout),
        }
    }
}

impl PaymentProcessor for Simulator {
    async fn charge(&self, op: Operation) -> Result<Outcome, ProcessorError> {
        self.call("charge", op).await
    }

    async fn refund(&self, op: Operation) -> Result<Outcome, ProcessorError> {
        self.call("refund", op).await
    }

    async fn lookup(&self, processor_key: String) -> Result<Option<Outcome>, ProcessorError> {
        let found = db::read(&self.pool, move |conn| {
            let row: Option<(String, Option<String>)> = ops::table
                .find(&processor_key)
                .select((ops::status, ops::decline_code))
                .first(conn)
                .optional()?;
            Ok(row)
        })
        .await
        .map_err(|_| ProcessorError::Unavailable)?;
        Ok(found.and_then(
            |(status, code)| match stored_answer(&status, code.as_deref()) {
                Answer::Done(outcome) => Some(outcome),
                _ => None,
            },
        ))
    }
}

fn decline(code: &str, message: &str) -> Outcome {
    Outcome::Declined {
        code: code.to_owned(),
        message: message.to_owned(),
    }
}

/// Applies one call to the ledger: the first call for a key decides the result, later
/// calls return it (`pm_card_flaky` and `pm_card_timeout` change on the second call).
fn record(conn: &mut DbConnection, kind: &str, op: &Operation) -> QueryResult<Answer> {
    db::write_transaction(conn, |conn| {
        let now = db::now(conn)?;
        if now >= op.deadline {
            // The caller's lease has ended: another execution may own the request now.
            return Ok(Answer::Unavailable);
        }
        let existing: Option<(String, Option<String>, i32)> = ops::table
            .find(&op.processor_key)
            .select((ops::status, ops::decline_code, ops::calls))
            .first(conn)
            .optional()?;
        let (status, code, answer) = match (existing, op.payment_method.as_str()) {
            (_, "pm_card_processor_down") => return Ok(Answer::Unavailable),
            (Some((status, code, _)), method) => {
                let status = if method == "pm_card_flaky" {
                    "succeeded".to_owned()
                } else {
                    status
                };
                let answer = stored_answer(&status, code.as_deref());
                (status, code, Some(answer))
            }
            (None, "pm_card_declined") => ("declined".into(), Some("card_declined".into()), None),
            (None, "pm_card_insufficient_funds") => {
                ("declined".into(), Some("insufficient_funds".into()), None)
            }
            (None, "pm_card_flaky") => ("unavailable".into(), None, Some(Answer::Unavailable)),
            (None, "pm_card_timeout") => ("succeeded".into(), None, Some(Answer::Lost)),
            (None, _) => ("succeeded".into(), None, None),
        };
        crate::per_backend!(conn, |c| diesel::insert_into(ops::table)
            .values((
                ops::processor_key.eq(&op.processor_key),
                ops::kind.eq(kind),
                ops::amount.eq(op.amount),
                ops::currency.eq(&op.currency),
                ops::payment_method.eq(&op.payment_method),
                ops::status.eq(&status),
                ops::decline_code.eq(&code),
                ops::calls.eq(1),
                ops::created_at.eq(now),
                ops::updated_at.eq(now),
            ))
            .on_conflict(ops::processor_key)
            .do_update()
            .set((
                ops::status.eq(&status),
                ops::calls.eq(ops::calls + 1),
                ops::updated_at.eq(now)
            ))
            .execute(c))?;
        Ok(answer.unwrap_or_else(|| stored_answer(&status, code.as_deref())))
    })
}

fn stored_answer(status: &str, code: Option<&str>) -> Answer {
    match (status, code) {
        ("succeeded", _) => Answer::Done(Outcome::Succeeded),
        ("declined", Some("insufficient_funds")) => Answer::Done(decline(
            "insufficient_funds",
            "the card has insufficient funds",
        )),
        ("declined", _) => Answer::Done(decline("card_declined", "the card was declined")),
        _ => Answer::Unavailable,
    }
}
