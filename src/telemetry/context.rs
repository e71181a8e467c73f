//! The id of the request being served, for code deep inside it: set for each poll of
//! the request's futures (and of the execution it detaches), and while its blocking
//! database work runs on another thread.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

thread_local! {
    static CURRENT: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// The id of the request this thread is serving now, if any (the reaper serves none).
pub fn current_request_id() -> Option<Arc<str>> {
    CURRENT.with(|current| current.borrow().clone())
}

/// Runs `f` as part of the request `id` (restoring what was current after).
pub fn with_request_id<T>(id: Option<Arc<str>>, f: impl FnOnce() -> T) -> T {
    let previous = CURRENT.with(|current| current.replace(id));
    let result = f();
    CURRENT.with(|current| *current.borrow_mut() = previous);
    result
}

pin_project_lite::pin_project! {
    /// A future that runs as part of a request: see [`scoped`].
    pub struct Scoped<F> {
        id: Option<Arc<str>>,
        #[pin]
        inner: F,
    }
}

/// `inner`, run as part of the request `id`: each poll sees it as the current request.
pub fn scoped<F: Future>(id: Option<Arc<str>>, inner: F) -> Scoped<F> {
    Scoped { id, inner }
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        with_request_id(this.id.clone(), || this.inner.poll(cx))
    }
}
