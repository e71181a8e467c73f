//! List pages: `limit` and `starting_after` in, `{object: "list", data, has_more}` out.
//! Lists are newest first and queried as `id < cursor ORDER BY id DESC LIMIT n+1`.

use std::collections::HashMap;

use actix_web::HttpResponse;
use serde::Serialize;

use crate::domain::ids;
use crate::error::ApiError;

/// A list page: `limit` 1–100 (default 10) and an optional `starting_after` id.
pub struct Page {
    pub limit: i64,
    pub starting_after: Option<String>,
}

/// The JSON of a page.
#[derive(Serialize)]
struct List<T> {
    object: &'static str,
    data: Vec<T>,
    has_more: bool,
}

impl Page {
    /// Parses the query; `extra` names the filters the list accepts besides the page.
    /// 400 `invalid_query` for an unknown parameter, a bad limit, or a malformed cursor
    /// (a well-formed unknown id is just a bound).
    pub fn parse(
        query: &HashMap<String, String>,
        prefix: &str,
        extra: &[&str],
    ) -> Result<Self, ApiError> {
        let invalid = |param: &str, message: &str| ApiError::InvalidQuery {
            param: param.into(),
            message: message.into(),
        };
        let known = |k: &str| matches!(k, "limit" | "starting_after") || extra.contains(&k);
        if let Some(unknown) = query.keys().find(|k| !known(k)) {
            return Err(invalid(unknown, "unknown parameter"));
        }
        let limit = match query.get("limit") {
            None => 10,
            Some(raw) => raw
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| invalid("limit", "must be an integer from 1 to 100"))?,
        };
        let starting_after = query.get("starting_after").cloned();
        if starting_after
            .as_deref()
            .is_some_and(|id| !ids::is_well_formed(prefix, id))
        {
            return Err(invalid(
                "starting_after",
                "must be an id returned by this API",
            ));
        }
        Ok(Self {
            limit,
            starting_after,
        })
    }

    /// The page's response from up to `limit + 1` rows (the extra one means `has_more`).
    pub fn respond<T: Serialize>(&self, mut rows: Vec<T>) -> HttpResponse {
        let has_more = rows.len() as i64 > self.limit;
        rows.truncate(self.limit as usize);
        HttpResponse::Ok().json(List {
            object: "list",
            data: rows,
            has_more,
        })
    }
}
