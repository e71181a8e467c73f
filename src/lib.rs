//! idempay: a payments/orders HTTP API whose money-moving endpoints are safe to retry.
//!
//! The idempotency engine lives in [`idempotency`]; the domain rules in [`domain`];
//! HTTP handlers in `routes`; storage in [`db`]. See DESIGN.md for the contract.

pub mod admin;
pub mod api_keys;
pub mod auth;
pub mod config;
pub mod db;
pub mod domain;
pub mod drain;
pub mod error;
pub mod faults;
pub mod idempotency;
pub mod limits;
pub mod merchants;
pub mod metrics;
pub mod movement;
pub mod orders;
pub mod payments;
pub mod processor;
pub mod reaper;
pub mod refunds;
mod routes;
pub mod startup;
pub mod state;
pub mod telemetry;
pub mod test_faults;

pub use routes::ROUTES;
