//! Idempotency keys: the header, the request fingerprint, the record store and the
//! engine that runs every keyed POST under the protocol of DESIGN §2–3.

pub mod decide;
pub mod engine;
pub mod fingerprint;
pub mod finish;
pub mod inspect;
pub mod key;
pub mod record;
pub mod recovery;
pub mod replay_cache;
mod respond;
pub mod waiters;

pub use engine::{execute, execute_atomic};
pub use key::IdempotencyKey;
pub use record::{Lease, RequestIdentity, StoredResponse};
