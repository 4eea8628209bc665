//! The server: shared state, routes, the HTTP records endpoint, and the shutdown sequence.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use sleet_exec::RawRecords;
use tokio::sync::{oneshot, watch, Notify};

use crate::admission::InFlight;
use crate::args::FormatArg;
use crate::args::IngestArgs;
use crate::auth::authorized;
use crate::error::IngestError;
use crate::format::{BadBody, BadRecord, Format, RecordFormat, AVRO_BATCH_CONTENT_TYPE};
use crate::listener::LimitedListener;
use crate::refusal::Refusal;
use crate::stats::{Stats, StatsReport};
use crate::writer::{spawn_writer, Submission, WriterSettings};

/// What every handler shares.
pub struct Ingest {
    pub(crate) format: Format,
    in_flight: InFlight,
    queue: SyncSender<Submission>,
    pub(crate) stats: Arc<Stats>,
    token: Option<Vec<u8>>,
    pub(crate) ack_timeout: Duration,
    pub(crate) shutdown: watch::Receiver<bool>,
    started: Instant,
    pub(crate) body_bytes_max: usize,
    pub(crate) ws_pending_max: usize,
    pub(crate) ws_outgoing_max: usize,
    pub(crate) ws_connections: Arc<Tracker>,
}

impl Ingest {
    pub(crate) fn shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Hands `values` (checked, with their `keys`) to the Kafka writer and waits for
    /// Kafka's acknowledgement, at most the ack timeout.
    pub(crate) async fn submit(&self, values: RawRecords, keys: RawRecords, received: Instant) -> Result<(), Refusal> {
        let answer = self.hand_over(values, keys, received)?;
        self.await_answer(answer).await
    }

    /// The first half of `submit`: admitted and queued, or refused at once.
    pub(crate) fn hand_over(
        &self,
        values: RawRecords,
        keys: RawRecords,
        received: Instant,
    ) -> Result<oneshot::Receiver<Result<(), Refusal>>, Refusal> {
        if self.shutting_down() {
            return Err(Refusal::ShuttingDown);
        }
        let admission = self.in_flight.admit(values.len(), values.data.len() + keys.data.len())?;
        let (reply, answer) = oneshot::channel();
        match self.queue.try_send(Submission { values, keys, received, admission, reply }) {
            Ok(()) => Ok(answer),
            Err(TrySendError::Full(_)) => Err(Refusal::Overloaded("the Kafka writer's queue is full".to_string())),
            Err(TrySendError::Disconnected(_)) => Err(Refusal::ShuttingDown),
        }
    }

    pub(crate) async fn await_answer(&self, answer: oneshot::Receiver<Result<(), Refusal>>) -> Result<(), Refusal> {
        match tokio::time::timeout(self.ack_timeout, answer).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(Refusal::KafkaUnavailable("the Kafka writer stopped".to_string())),
            Err(_) => Err(Refusal::Timeout(format!(
                "Kafka did not acknowledge within the ack timeout of {:?}",
                self.ack_timeout
            ))),
        }
    }
}

/// Counts live WebSocket connections, which the HTTP server's graceful shutdown does not
/// wait for once they are upgraded.
#[derive(Default)]
pub struct Tracker {
    live: AtomicUsize,
    changed: Notify,
}

pub struct TrackerGuard(Arc<Tracker>);

impl Tracker {
    pub fn enter(self: &Arc<Self>) -> TrackerGuard {
        self.live.fetch_add(1, Ordering::SeqCst);
        TrackerGuard(Arc::clone(self))
    }

    async fn idle(&self) {
        loop {
            let changed = self.changed.notified();
            if self.live.load(Ordering::SeqCst) == 0 {
                return;
            }
            changed.await;
        }
    }
}

impl Drop for TrackerGuard {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_waiters();
    }
}

pub(crate) fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = (status, serde_json::to_vec(body).unwrap_or_default()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The HTTP answer to a refusal: 413 for what can never fit, 503 with `Retry-After` for
/// what may succeed later.
pub(crate) fn refusal_response(refusal: &Refusal) -> Response {
    let (status, retry_after_s) = match refusal {
        Refusal::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, None),
        Refusal::Overloaded(_) | Refusal::Timeout(_) => (StatusCode::SERVICE_UNAVAILABLE, Some("1")),
        Refusal::KafkaUnavailable(_) | Refusal::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, Some("5")),
    };
    let mut response = json_response(status, &serde_json::json!({ "error": refusal.to_string() }));
    if let Some(seconds) = retry_after_s {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(seconds));
    }
    response
}

pub(crate) fn bad_records_message(bad: &[BadRecord], total: usize) -> String {
    format!("{} of {total} records are invalid; none of the request was written", bad.len())
}

/// Whether a body's `Content-Type` fits the server's format: an Avro server takes only
/// `AVRO_BATCH_CONTENT_TYPE` and a JSON server anything else (it never checked the type, and
/// clients that send none keep working), so a client of the wrong format learns it at once
/// instead of from a parse error.
fn content_type_fits(format: &Format, headers: &HeaderMap) -> bool {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("");
    let avro_body =
        content_type.split(';').next().is_some_and(|media| media.trim().eq_ignore_ascii_case(AVRO_BATCH_CONTENT_TYPE));
    avro_body == format.is_avro()
}

async fn post_records(State(ingest): State<Arc<Ingest>>, headers: HeaderMap, body: Bytes) -> Response {
    let received = Instant::now();
    if !content_type_fits(&ingest.format, &headers) {
        ingest.stats.refused(0);
        let error = if ingest.format.is_avro() {
            format!("this server takes Avro records: send them with Content-Type: {AVRO_BATCH_CONTENT_TYPE}")
        } else {
            "this server takes JSON records, not Avro".to_string()
        };
        return json_response(StatusCode::UNSUPPORTED_MEDIA_TYPE, &serde_json::json!({ "error": error }));
    }
    let values = match ingest.format.split_body(&body) {
        Ok(values) => values,
        Err(BadBody(reason)) => {
            ingest.stats.refused(0);
            return json_response(StatusCode::BAD_REQUEST, &serde_json::json!({ "error": reason }));
        }
    };
    let count = values.len();
    let keys = match ingest.format.check(&values) {
        Ok(keys) => keys,
        Err(bad) => {
            ingest.stats.refused(count);
            let error = bad_records_message(&bad, count);
            return json_response(StatusCode::BAD_REQUEST, &serde_json::json!({ "error": error, "records": bad }));
        }
    };
    match ingest.submit(values, keys, received).await {
        Ok(()) => json_response(StatusCode::OK, &serde_json::json!({ "records": count })),
        Err(refusal) => {
            ingest.stats.refused(count);
            refusal_response(&refusal)
        }
    }
}

async fn get_stats(State(ingest): State<Arc<Ingest>>) -> Response {
    let report = ingest.stats.report(ingest.started);
    json_response(StatusCode::OK, &serde_json::to_value(report).unwrap_or_default())
}

async fn require_token(State(ingest): State<Arc<Ingest>>, request: Request, next: Next) -> Response {
    if let Some(token) = &ingest.token {
        let given = request.headers().get(header::AUTHORIZATION).map(HeaderValue::as_bytes);
        if !authorized(given, token) {
            let mut response = json_response(
                StatusCode::UNAUTHORIZED,
                &serde_json::json!({ "error": "a missing or wrong bearer token" }),
            );
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    next.run(request).await
}

fn token(args: &IngestArgs) -> Result<Option<Vec<u8>>, IngestError> {
    let (token, from) = match &args.token_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|source| IngestError::TokenFile { path: path.clone(), source })?;
            (text, format!("file {}", path.display()))
        }
        None => match std::env::var("SLEET_INGEST_TOKEN") {
            Ok(text) => (text, "in SLEET_INGEST_TOKEN".to_string()),
            Err(_) => return Ok(None),
        },
    };
    let token = token.trim_end();
    if token.is_empty() {
        return Err(IngestError::EmptyToken { from });
    }
    Ok(Some(token.as_bytes().to_vec()))
}

/// Shorter than this, connections would be closed between one client's writes.
const IDLE_TIMEOUT_MIN: Duration = Duration::from_millis(100);

fn check_limits(args: &IngestArgs) -> Result<(), IngestError> {
    if args.idle_timeout < IDLE_TIMEOUT_MIN {
        return Err(IngestError::TooShort { flag: "idle-timeout", min: IDLE_TIMEOUT_MIN });
    }
    let limits: [(&'static str, u64, u64); 6] = [
        ("body-bytes-max", args.body_bytes_max as u64, 2),
        ("records-in-flight-max", args.records_in_flight_max as u64, 1),
        ("bytes-in-flight-max", args.bytes_in_flight_max as u64, args.body_bytes_max as u64),
        ("connections-max", args.connections_max as u64, 1),
        ("ws-pending-max", args.ws_pending_max as u64, 1),
        ("ws-outgoing-max", args.ws_outgoing_max as u64, 1),
    ];
    match limits.into_iter().find(|(_, value, min)| value < min) {
        Some((flag, _, min)) => Err(IngestError::Limit { flag, min }),
        None => Ok(()),
    }
}

/// Runs the server until `shutdown` completes, then finishes what is in flight (bounded by
/// the shutdown timeout) and returns the final figures. `on_bound` learns the address first.
pub async fn serve(
    args: IngestArgs,
    on_bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<StatsReport, IngestError> {
    check_limits(&args)?;
    let format = Format::open(args.format == FormatArg::Avro, &args.schema, &args.key, args.record_bytes_max)?;
    let token = token(&args)?;
    let stats = Arc::new(Stats::default());
    let settings = WriterSettings {
        brokers: args.brokers.clone(),
        topic: args.topic.clone(),
        create_partitions: args.partitions,
        linger: args.linger,
        batch_bytes_max: 512 << 10,
        reconnect_backoff: Duration::from_millis(500),
    };
    // Every submission holds at least one record's admission, so the queue never fills
    // before the in-flight bound does.
    let (queue, _writer) = spawn_writer(settings, Arc::clone(&stats), args.records_in_flight_max as usize)
        .map_err(IngestError::WriterThread)?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|source| IngestError::Listen { address: args.listen.clone(), source })?;
    let address =
        listener.local_addr().map_err(|source| IngestError::Listen { address: args.listen.clone(), source })?;
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let ingest = Arc::new(Ingest {
        format,
        in_flight: InFlight::new(args.records_in_flight_max, args.bytes_in_flight_max),
        queue,
        stats: Arc::clone(&stats),
        token,
        ack_timeout: args.ack_timeout,
        shutdown: shutdown_rx.clone(),
        started: Instant::now(),
        body_bytes_max: args.body_bytes_max,
        ws_pending_max: args.ws_pending_max,
        ws_outgoing_max: args.ws_outgoing_max,
        ws_connections: Arc::new(Tracker::default()),
    });
    let router = Router::new()
        .route("/v1/records", post(post_records))
        .route("/v1/stream", get(crate::ws::upgrade))
        .route("/v1/stats", get(get_stats))
        .layer(middleware::from_fn_with_state(Arc::clone(&ingest), require_token))
        .layer(DefaultBodyLimit::max(args.body_bytes_max))
        .with_state(Arc::clone(&ingest));
    on_bound(address);

    tokio::spawn(async move {
        shutdown.await;
        let _ = shutdown_tx.send(true);
    });
    let mut stop_accepting = shutdown_rx.clone();
    let server = axum::serve(LimitedListener::new(listener, args.connections_max, args.idle_timeout), router)
        .with_graceful_shutdown(async move {
            let _ = stop_accepting.wait_for(|stopping| *stopping).await;
        });
    let mut server = tokio::spawn(async move { server.await });
    let mut signalled = shutdown_rx.clone();
    // A signal both ends the wait and starts the graceful shutdown, and with no connection
    // open the server may finish first: then it is done, and its handle must not be polled
    // again (tokio panics on a handle polled after completion).
    let server_done = tokio::select! {
        served = &mut server => {
            if let Ok(Err(error)) = served {
                return Err(IngestError::Serve(error));
            }
            true
        }
        _ = signalled.wait_for(|stopping| *stopping) => false,
    };
    let connections = Arc::clone(&ingest.ws_connections);
    let drained = tokio::time::timeout(args.shutdown_timeout, async move {
        if !server_done {
            let _ = server.await;
        }
        connections.idle().await;
    })
    .await;
    if drained.is_err() {
        eprintln!(
            "sleet ingest: requests still in flight after the shutdown timeout of {:?} are refused",
            args.shutdown_timeout
        );
    }
    Ok(stats.report(ingest.started))
}

/// Completes on SIGTERM or SIGINT. The handlers are in place when this returns, so a signal
/// sent as soon as the server prints its address is caught rather than killing the process.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let terminate = signal(SignalKind::terminate());
    let interrupt = signal(SignalKind::interrupt());
    async move {
        match (terminate, interrupt) {
            (Ok(mut terminate), Ok(mut interrupt)) => {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = interrupt.recv() => {}
                }
            }
            // Without signal handlers the process dies on the signal as it would anyway.
            _ => std::future::pending::<()>().await,
        }
    }
}
