//! Logs, request ids and the per-request access line: tracing to standard error (text
//! or JSON lines) through a background writer, one span per request carrying its
//! `X-Request-Id`, and that id available to whatever the request runs (a problem
//! document names the request that produced it).

mod context;
mod request;

pub use context::{current_request_id, scoped, with_request_id};
pub use request::{request_span, REQUEST_ID};

/// How log lines are written: `text` for people, `json` (one object per line) for a
/// log pipeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The log filter when `RUST_LOG` is unset: `info`, without actix-http's per-connection
/// "stream error: request parse error" lines. Those are logged at ERROR for malformed
/// requests a client sent (an invalid header, a bad chunk size), which actix already
/// answers with 400; at ERROR they would page an operator for somebody else's bug.
/// `RUST_LOG=info` brings them back.
pub const DEFAULT_FILTER: &str = "info,actix_http::h1::dispatcher=off";

/// Keeps the log writer's thread running; dropping it flushes what is queued.
pub struct LogGuard {
    _writer: Option<tracing_appender::non_blocking::WorkerGuard>,
}

/// Installs the tracing subscriber; `RUST_LOG` filters (default [`DEFAULT_FILTER`]). Lines go to
/// standard error through a background thread (`tracing-appender`), so a request never
/// waits on the write; none is dropped (a full queue makes the logger wait instead).
/// Keep the returned guard alive until exit.
pub fn init(format: LogFormat) -> LogGuard {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_FILTER));
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .finish(std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    let installed = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    LogGuard {
        _writer: installed.is_ok().then_some(guard),
    }
}
