//! Payments and refunds: their requests, rules and JSON representations. No I/O.

use chrono::NaiveDateTime;
use serde::Serialize;
use serde_json::Value;

use super::fields::{required, Fields};
use super::ids;
use super::money::check_amount;
use crate::error::ApiError;

/// The test payment methods the simulator knows (see `processor::simulator`).
pub const PAYMENT_METHODS: &[&str] = &[
    "pm_card_visa",
    "pm_card_declined",
    "pm_card_insufficient_funds",
    "pm_card_processor_down",
    "pm_card_flaky",
    "pm_card_timeout",
    "pm_card_slow",
];

/// Why a refund was made.
pub const REFUND_REASONS: &[&str] = &["requested_by_customer", "duplicate", "fraudulent"];

/// Statuses of payments and refunds.
pub mod status {
    pub const PROCESSING: &str = "processing";
    pub const SUCCEEDED: &str = "succeeded";
    pub const FAILED: &str = "failed";
}

/// A validated `POST /payments` body.
#[derive(Debug, Clone)]
pub struct NewPayment {
    pub order_id: String,
    pub payment_method: String,
    /// If given, must equal the order's outstanding amount (minor units).
    pub amount: Option<i64>,
    /// If given, must equal the order's currency.
    pub currency: Option<String>,
}

impl NewPayment {
    /// Validates `{order_id, payment_method, amount?, currency?}`; 422 on any violation.
    pub fn from_json(body: &Value) -> Result<Self, ApiError> {
        let fields = Fields::new(body, &["order_id", "payment_method", "amount", "currency"])?;
        let order_id = required("order_id", fields.string("order_id", 64)?)?;
        if !ids::is_well_formed(ids::ORDER, order_id) {
            return Err(ApiError::invalid("order_id", "must be an order id (ord_…)"));
        }
        let method = required("payment_method", fields.string("payment_method", 64)?)?;
        if !PAYMENT_METHODS.contains(&method) {
            return Err(ApiError::invalid(
                "payment_method",
                format!("must be one of {}", PAYMENT_METHODS.join(", ")),
            ));
        }
        let amount = fields.integer("amount")?;
        if let Some(amount) = amount {
            check_amount(amount).map_err(|m| ApiError::invalid("amount", m))?;
        }
        let currency = fields.string("currency", 3)?.map(str::to_owned);
        if currency
            .as_deref()
            .is_some_and(|c| !super::money::is_known_currency(c))
        {
            return Err(ApiError::invalid(
                "currency",
                "must be an ISO 4217 currency code in uppercase, e.g. EUR",
            ));
        }
        Ok(Self {
            order_id: order_id.to_owned(),
            payment_method: method.to_owned(),
            amount,
            currency,
        })
    }
}

/// A validated `POST /payments/{id}/refunds` body.
#[derive(Debug, Clone)]
pub struct NewRefund {
    /// Minor units; defaults to what is left to refund.
    pub amount: Option<i64>,
    pub reason: Option<String>,
}

impl NewRefund {
    /// Validates `{amount?, reason?}`; 422 on any violation.
    pub fn from_json(body: &Value) -> Result<Self, ApiError> {
        let fields = Fields::new(body, &["amount", "reason"])?;
        let amount = fields.integer("amount")?;
        if let Some(amount) = amount {
            check_amount(amount).map_err(|m| ApiError::invalid("amount", m))?;
        }
        let reason = fields.string("reason", 64)?;
        if reason.is_some_and(|r| !REFUND_REASONS.contains(&r)) {
            return Err(ApiError::invalid(
                "reason",
                format!("must be one of {}", REFUND_REASONS.join(", ")),
            ));
        }
        Ok(Self {
            amount,
            reason: reason.map(str::to_owned),
        })
    }
}

/// A payment as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Payment {
    pub id: String,
    pub object: &'static str,
    pub order_id: String,
    pub amount: i64,
    pub currency: String,
    pub status: String,
    pub payment_method: String,
    pub failure_code: Option<String>,
    pub failure_message: Option<String>,
    pub amount_refunded: i64,
    #[serde(serialize_with = "super::rfc3339")]
    pub created_at: NaiveDateTime,
    #[serde(serialize_with = "super::rfc3339")]
    pub updated_at: NaiveDateTime,
}

/// A refund as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Refund {
    pub id: String,
    pub object: &'static str,
    pub payment_id: String,
    pub amount: i64,
    pub currency: String,
    pub status: String,
    pub reason: Option<String>,
    /// Why a `failed` refund failed (`processor_unavailable`), else `null`.
    pub failure_code: Option<String>,
    #[serde(serialize_with = "super::rfc3339")]
    pub created_at: NaiveDateTime,
}
