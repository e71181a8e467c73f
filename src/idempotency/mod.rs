//! Idempotency keys: the header, the request fingerprint, the record store and the
//! engine that runs every keyed POST under the protocol of DESIGN §2–3.

pub mod engine;
pub mod fingerprint;
pub mod finish;
pub mod key;
pub mod record;
pub mod recovery;

pub use engine::execute;
pub use key::IdempotencyKey;
pub use record::{Lease, RequestIdentity, StoredResponse};
