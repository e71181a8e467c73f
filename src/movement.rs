//! The phases every movement of money goes through (DESIGN §3), written once for a
//! payment's charge and for a refund:
//!
//! 1. `started` → one transaction creates the movement (`processing`) and moves the
//!    record to the movement's recovery point (`payment_created`, `refund_created`);
//! 2. under a renewed lease, the processor call is sent with the movement's processor
//!    key (a parked movement is reopened first);
//! 3. one transaction settles the movement, its order and the record.
//!
//! A client's first request, its retry after an unknown outcome, and the reaper all run
//! through here, entering at the record's recovery point: resuming is re-sending the
//! same call with the same processor key, never "look it up and call if not found".

use chrono::TimeDelta;

use crate::db::{self, DbConnection};
use crate::error::ApiError;
use crate::idempotency::record::STARTED;
use crate::idempotency::{Lease, StoredResponse};
use crate::processor::simulator::Simulator;
use crate::processor::{self, Operation, Outcome, ProcessorError};
use crate::state::AppState;

/// A movement of money: what phases 2 and 3 need from a payment or a refund.
pub trait Movement: Sized + Send + 'static {
    /// Its recovery point after phase 1.
    const CREATED: &'static str;
    /// Its processor call, for metrics: `charge` or `refund`.
    const CALL: &'static str;
    /// The pause point right before that call (tests only).
    const BEFORE_CALL: &'static str;

    /// Prepares phase 2 under a renewed lease (a stale execution stops here): the
    /// movement `id` as stored, reopened if it was parked, and the call to send for it,
    /// whose deadline is the lease's new end. Errors: the lease was lost; the movement
    /// can no longer go ahead (permanent or retryable, by its error class).
    fn reopen(
        conn: &mut DbConnection,
        lease: &Lease,
        lease_len: TimeDelta,
        id: &str,
    ) -> Result<(Self, Operation), ApiError>;

    /// Sends the call to the processor.
    fn call(
        processor: &Simulator,
        operation: Operation,
    ) -> impl std::future::Future<Output = Result<Outcome, ProcessorError>>;

    /// Phase 3: settles the movement with the processor's answer, in one transaction
    /// with the record's completion; the response to store and send.
    fn settle(
        self,
        conn: &mut DbConnection,
        outcome: Outcome,
        lease: &Lease,
        ttl: TimeDelta,
    ) -> Result<StoredResponse, ApiError>;

    /// Parks the movement the processor did not attempt (it said it was unavailable):
    /// it blocks nothing, and a retry with its key reopens it.
    fn park(
        &self,
        conn: &mut DbConnection,
        lease: &Lease,
        lease_len: TimeDelta,
    ) -> Result<(), ApiError>;
}

/// Runs (or resumes) a movement under `lease`: phase 1 with `create` when the record is
/// at `started`, then [`resume`].
pub async fn execute<M: Movement>(
    state: AppState,
    lease: Lease,
    ttl: TimeDelta,
    create: impl FnOnce(&mut DbConnection, Lease) -> Result<Lease, ApiError> + Send + 'static,
) -> Result<StoredResponse, ApiError> {
    let mut lease = lease;
    if lease.recovery_point == STARTED {
        state.config.faults.pause_at(STARTED, lease.attempts).await;
        lease = db::run(&state.pool, move |conn| create(conn, lease)).await?;
    }
    resume::<M>(state, lease, ttl).await
}

/// Phases 2 and 3 from the movement's recovery point: sends the call with its processor
/// key and settles. Errors by class: a decline is settled and answered (stored);
/// `processor_unavailable` parks the movement (retryable); `processor_timeout` leaves
/// it at its recovery point (unknown, resumed by the next retry or the reaper).
pub async fn resume<M: Movement>(
    state: AppState,
    lease: Lease,
    ttl: TimeDelta,
) -> Result<StoredResponse, ApiError> {
    let faults = &state.config.faults;
    faults.pause_at(M::CREATED, lease.attempts).await;
    let id = lease
        .resource_id
        .clone()
        .ok_or_else(|| ApiError::Database(format!("record at {} names no movement", M::CREATED)))?;
    let (fence, lease_len) = (lease.clone(), state.config.lease());
    let (movement, operation) = db::run(&state.pool, move |conn| {
        M::reopen(conn, &fence, lease_len, &id)
    })
    .await?;
    faults.pause_at(M::BEFORE_CALL, lease.attempts).await;
    let call = M::call(&state.processor, operation);
    let timeout = state.config.processor_timeout();
    let outcome = processor::within(timeout, &state.metrics, M::CALL, call).await;
    faults.after_processor_call(lease.attempts).await?;
    match outcome {
        Ok(outcome) => {
            db::run(&state.pool, move |conn| {
                movement.settle(conn, outcome, &lease, ttl)
            })
            .await
        }
        Err(ProcessorError::Unavailable) => {
            db::run(&state.pool, move |conn| {
                movement.park(conn, &lease, lease_len)
            })
            .await?;
            Err(ApiError::ProcessorUnavailable)
        }
        Err(ProcessorError::Timeout) => Err(ApiError::ProcessorTimeout),
    }
}
