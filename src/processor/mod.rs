//! The payment processor boundary: a [`PaymentProcessor`] trait and the built-in
//! [`simulator::Simulator`].
//!
//! Every call carries a processor idempotency key derived from the idempotency record,
//! so re-sending a call (a client's retry or a recovery) never moves money twice. A
//! resume re-sends the same call: "not found" never means "not charged".

pub mod simulator;

use std::future::Future;

/// One money movement: a charge of a payment or a refund of one.
#[derive(Debug, Clone)]
pub struct Operation {
    /// The processor idempotency key: one per payment or refund, kept across retries.
    pub processor_key: String,
    /// Minor units.
    pub amount: i64,
    /// ISO 4217.
    pub currency: String,
    /// The test payment method (`pm_card_visa`, …) that decides the simulator's answer.
    pub payment_method: String,
    /// The caller's lease ends then (UTC, the database's clock): a call that would land
    /// later is refused without moving money, so an execution that lost its lease can
    /// never move money after another took over (a fencing deadline at the processor).
    pub deadline: chrono::NaiveDateTime,
}

/// What the processor answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Money moved.
    Succeeded,
    /// The card was refused for good (`card_declined`, `insufficient_funds`).
    Declined { code: String, message: String },
}

/// A call that got no definite answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessorError {
    /// The processor said nothing happened; the same call may be sent again.
    #[error("the payment processor is unavailable; nothing was charged")]
    Unavailable,
    /// The call was sent and no answer came: it may or may not have moved money.
    #[error("the payment processor did not answer; the outcome is unknown")]
    Timeout,
}

/// A payment processor. Both calls are idempotent on `Operation::processor_key`.
pub trait PaymentProcessor: Send + Sync {
    /// Charges a payment method.
    fn charge(&self, op: Operation) -> impl Future<Output = Result<Outcome, ProcessorError>>;
    /// Refunds (part of) a charge.
    fn refund(&self, op: Operation) -> impl Future<Output = Result<Outcome, ProcessorError>>;
    /// What the processor holds for a processor key, moving no money: `None` when it
    /// made no charge or refund under that key. Only trusted once no call under the key
    /// can still be in flight (a lookup never replaces re-sending the call).
    fn lookup(
        &self,
        processor_key: String,
    ) -> impl Future<Output = Result<Option<Outcome>, ProcessorError>>;
}

/// Awaits a processor call (`method`: `charge` or `refund`) for at most `timeout`: past
/// it, the call counts as sent and unanswered ([`ProcessorError::Timeout`], an unknown
/// outcome that a retry resumes with the same processor key). Counted in `metrics`.
pub async fn within(
    timeout: std::time::Duration,
    metrics: &crate::metrics::Metrics,
    method: &'static str,
    call: impl Future<Output = Result<Outcome, ProcessorError>>,
) -> Result<Outcome, ProcessorError> {
    let answer = tokio::time::timeout(timeout, call)
        .await
        .unwrap_or(Err(ProcessorError::Timeout));
    let outcome = match &answer {
        Ok(Outcome::Succeeded) => "succeeded",
        Ok(Outcome::Declined { .. }) => "declined",
        Err(ProcessorError::Unavailable) => "unavailable",
        Err(ProcessorError::Timeout) => "timeout",
    };
    metrics
        .processor_calls
        .with_label_values(&[method, outcome])
        .inc();
    answer
}
