//! The replay cache: the stored responses of finished idempotency records, held in
//! memory so that a replay costs no database round trip.
//!
//! Why it is safe, across instances too: a record that finished (`succeeded` or
//! `failed`) never changes again before it expires, and only an expired record can be
//! replaced. So an entry, scoped by merchant and key and checked against the request's
//! fingerprint, answers exactly as the database would, until the record's expiry. Each
//! entry expires by this process's monotonic clock a safety margin before the record
//! does (the database's clock decides the record's expiry; only durations cross over).
//! A record still `processing` or `failed_retryable` is never cached, and a miss reads
//! the database. Bounded in entries and in bytes; the oldest entries go first.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::record::{RequestIdentity, StoredResponse};

/// An entry expires this long before its record, and a record with less left is not
/// cached: more than the time between the database's expiry clock and this process's.
pub const SAFETY_MARGIN: Duration = Duration::from_secs(1);

/// What the cache knows about a request's key.
#[derive(Debug, PartialEq, Eq)]
pub enum Cached {
    /// The key finished with this response: replay it.
    Replay(StoredResponse),
    /// The key finished for another request (another fingerprint): 409 reused.
    Reused,
}

/// Finished records' responses by `(merchant, key)`, bounded.
#[derive(Debug)]
pub struct ReplayCache {
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    /// Insertion order, for eviction: (scope, the entry's sequence number when queued).
    order: VecDeque<(String, u64)>,
    bytes: usize,
    next_seq: u64,
}

#[derive(Debug)]
struct Entry {
    fingerprint: String,
    /// The exact bytes' digest of the request that put the entry.
    raw_digest: [u8; 32],
    response: StoredResponse,
    expires: Instant,
    seq: u64,
    bytes: usize,
}

/// The map key: merchant and idempotency key (neither holds a newline).
fn scope(merchant_id: &str, key: &str) -> String {
    format!("{merchant_id}\n{key}")
}

impl ReplayCache {
    /// A cache of at most `max_entries` entries and `max_bytes` bytes of keys and
    /// responses; `max_entries` 0 turns it off.
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            max_entries,
            max_bytes,
            inner: Mutex::default(),
        }
    }

    /// The cached answer for `request`, if its key finished and has not expired.
    pub fn get(&self, request: &RequestIdentity) -> Option<Cached> {
        if self.max_entries == 0 {
            return None;
        }
        let scope = scope(&request.merchant_id, &request.key);
        let mut inner = self.inner.lock();
        let entry = inner.entries.get(&scope)?;
        if entry.expires <= Instant::now() {
            inner.remove(&scope);
            return None;
        }
        Some(match entry.fingerprint == request.fingerprint {
            true => Cached::Replay(entry.response.clone()),
            false => Cached::Reused,
        })
    }

    /// The response for a request whose exact bytes (method, path, body: `raw_digest`)
    /// are those of the request that finished `(merchant, key)`, if it has not expired:
    /// one digest means one fingerprint, so this is the replay [`Self::get`] would
    /// give, without parsing the body. `None` otherwise (the caller then goes the
    /// usual way).
    pub fn get_unchanged(
        &self,
        merchant_id: &str,
        key: &str,
        raw_digest: &[u8; 32],
    ) -> Option<StoredResponse> {
        if self.max_entries == 0 {
            return None;
        }
        let inner = self.inner.lock();
        let entry = inner.entries.get(&scope(merchant_id, key))?;
        (entry.raw_digest == *raw_digest && entry.expires > Instant::now())
            .then(|| entry.response.clone())
    }

    /// Remembers that `request`'s key finished with `response`, its record expiring
    /// `remaining` from now (by the database's clock).
    pub fn put(&self, request: &RequestIdentity, response: &StoredResponse, remaining: Duration) {
        let Some(lifetime) = remaining
            .checked_sub(SAFETY_MARGIN)
            .filter(|l| !l.is_zero())
        else {
            return;
        };
        let scope = scope(&request.merchant_id, &request.key);
        let bytes = scope.len()
            + request.fingerprint.len()
            + response.body.len()
            + response.content_type.len()
            + response.location.as_ref().map_or(0, String::len);
        if self.max_entries == 0 || bytes > self.max_bytes {
            return;
        }
        let mut inner = self.inner.lock();
        inner.remove(&scope);
        if inner.order.len() > 2 * self.max_entries {
            inner.compact();
        }
        while inner.entries.len() >= self.max_entries || inner.bytes + bytes > self.max_bytes {
            inner.evict_oldest();
        }
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.order.push_back((scope.clone(), seq));
        inner.bytes += bytes;
        let entry = Entry {
            fingerprint: request.fingerprint.clone(),
            raw_digest: request.raw_digest,
            response: response.clone(),
            expires: Instant::now() + lifetime,
            seq,
            bytes,
        };
        inner.entries.insert(scope, entry);
    }

    /// How many entries and bytes the cache holds.
    pub fn size(&self) -> (usize, usize) {
        let inner = self.inner.lock();
        (inner.entries.len(), inner.bytes)
    }
}

impl Inner {
    fn remove(&mut self, scope: &str) {
        if let Some(entry) = self.entries.remove(scope) {
            self.bytes -= entry.bytes;
        }
    }

    /// Drops queue items of entries that were replaced or removed.
    fn compact(&mut self) {
        let entries = &self.entries;
        self.order
            .retain(|(scope, seq)| entries.get(scope).is_some_and(|e| e.seq == *seq));
    }

    /// Drops the oldest live entry (queue items of replaced entries are skipped).
    fn evict_oldest(&mut self) {
        while let Some((scope, seq)) = self.order.pop_front() {
            if self.entries.get(&scope).is_some_and(|e| e.seq == seq) {
                self.remove(&scope);
                return;
            }
        }
    }
}

#[cfg(test)]
#[path = "replay_cache_tests.rs"]
mod tests;
