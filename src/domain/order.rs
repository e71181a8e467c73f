//! Orders: the rules of creating and cancelling one, and its JSON representation.
//! No I/O here.

use chrono::NaiveDateTime;
use serde::Serialize;
use serde_json::{Map, Value};

use super::fields::{required, Fields};
use super::money::{check_amount, is_known_currency};
use crate::error::ApiError;

/// Longest `description`, in characters.
pub const MAX_DESCRIPTION: usize = 1000;
/// Most `metadata` pairs; longest key and value, in characters.
pub const MAX_METADATA_PAIRS: usize = 50;
pub const MAX_METADATA_KEY: usize = 40;
pub const MAX_METADATA_VALUE: usize = 500;

/// Order statuses.
pub mod status {
    pub const AWAITING_PAYMENT: &str = "awaiting_payment";
    pub const PAID: &str = "paid";
    pub const PARTIALLY_REFUNDED: &str = "partially_refunded";
    pub const REFUNDED: &str = "refunded";
    pub const CANCELLED: &str = "cancelled";
}

/// A validated `POST /orders` body.
#[derive(Debug, Clone)]
pub struct NewOrder {
    /// Minor units, 1 ≤ amount ≤ 10^12.
    pub amount: i64,
    /// ISO 4217 alpha-3, uppercase.
    pub currency: String,
    pub description: Option<String>,
    /// String → string, serialised as a JSON object.
    pub metadata: Map<String, Value>,
}

impl NewOrder {
    /// Validates `{amount, currency, description?, metadata?}`; 422 on any violation.
    pub fn from_json(body: &Value) -> Result<Self, ApiError> {
        let fields = Fields::new(body, &["amount", "currency", "description", "metadata"])?;
        let amount = required("amount", fields.integer("amount")?)?;
        let amount = check_amount(amount).map_err(|m| ApiError::invalid("amount", m))?;
        let currency = required("currency", fields.string("currency", 3)?)?;
        if !is_known_currency(currency) {
            return Err(ApiError::invalid(
                "currency",
                "must be an ISO 4217 currency code in uppercase, e.g. EUR",
            ));
        }
        let description = fields
            .string("description", MAX_DESCRIPTION)?
            .map(str::to_owned);
        let metadata = fields.object("metadata")?.cloned().unwrap_or_default();
        check_metadata(&metadata)?;
        Ok(Self {
            amount,
            currency: currency.to_owned(),
            description,
            metadata,
        })
    }
}

fn check_metadata(metadata: &Map<String, Value>) -> Result<(), ApiError> {
    if metadata.len() > MAX_METADATA_PAIRS {
        return Err(ApiError::invalid(
            "metadata",
            format!("at most {MAX_METADATA_PAIRS} pairs"),
        ));
    }
    for (key, value) in metadata {
        let param = format!("metadata[{key}]");
        let chars = key.chars().count();
        if chars == 0 || chars > MAX_METADATA_KEY {
            return Err(ApiError::invalid(
                param,
                format!("keys must be 1 to {MAX_METADATA_KEY} characters"),
            ));
        }
        let text = value
            .as_str()
            .ok_or_else(|| ApiError::invalid(&param, "values must be strings"))?;
        if text.chars().count() > MAX_METADATA_VALUE {
            return Err(ApiError::invalid(
                param,
                format!("values must be at most {MAX_METADATA_VALUE} characters"),
            ));
        }
    }
    Ok(())
}

/// An order as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Order {
    pub id: String,
    pub object: &'static str,
    pub amount: i64,
    pub currency: String,
    pub status: String,
    pub amount_paid: i64,
    pub amount_refunded: i64,
    pub description: Option<String>,
    pub metadata: Map<String, Value>,
    #[serde(serialize_with = "super::rfc3339")]
    pub created_at: NaiveDateTime,
    #[serde(serialize_with = "super::rfc3339")]
    pub updated_at: NaiveDateTime,
}

impl Order {
    /// Whether the order may be cancelled now; 409 `order_not_cancellable` otherwise.
    /// Cancelling a cancelled order is allowed (it returns the order unchanged).
    pub fn check_cancellable(&self) -> Result<(), ApiError> {
        match self.status.as_str() {
            status::AWAITING_PAYMENT | status::CANCELLED => Ok(()),
            other => Err(ApiError::OrderNotCancellable {
                status: other.to_owned(),
            }),
        }
    }
}
