//! Query strings and list pages. One rule for every route: a query parameter the route
//! does not define is `400 invalid_query`, and so is a parameter given twice (neither
//! the first nor the last wins). Lists take `limit` and `starting_after` and answer
//! `{object: "list", data, has_more}`, newest first, queried as `id < cursor ORDER BY
//! id DESC LIMIT n+1`.

use std::collections::HashMap;

use std::future::{ready, Ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, HttpResponse};
use serde::Serialize;

use crate::domain::ids;
use crate::error::ApiError;

/// The query parameters of a request, each given at most once (an extractor).
/// Errors: 400 `invalid_query` for a malformed query string or a repeated parameter.
pub struct Query(HashMap<String, String>);

/// An extractor for routes that take no query parameter: 400 `invalid_query` for any.
pub struct NoQuery;

fn invalid(param: &str, message: &str) -> ApiError {
    ApiError::InvalidQuery {
        param: param.into(),
        message: message.into(),
    }
}

fn parse_query(query: &str) -> Result<HashMap<String, String>, ApiError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|_| invalid("query", "is not a valid query string"))?;
    let mut params = HashMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        if params.contains_key(&name) {
            return Err(invalid(&name, "is given more than once"));
        }
        params.insert(name, value);
    }
    Ok(params)
}

impl FromRequest for Query {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(parse_query(req.query_string()).map(Query))
    }
}

impl std::ops::Deref for Query {
    type Target = HashMap<String, String>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl FromRequest for NoQuery {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(
            parse_query(req.query_string()).and_then(|params| match params.keys().min() {
                Some(unknown) => Err(invalid(unknown, "unknown parameter")),
                None => Ok(NoQuery),
            }),
        )
    }
}

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
