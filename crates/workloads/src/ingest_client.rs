//! `sleet gen gateway --to http|ws`: the generator as a client of `sleet ingest`
//! (`docs/ingest.md`). Each partition thread owns one `RecordSender`, with a current-thread
//! runtime of its own driving hyper (HTTP/1.1) or tokio-tungstenite (WebSocket).
//!
//! ```text
//!  send(records) ─▶ bodies of --batch records (JSON array, or length-prefixed Avro)
//!     HTTP: --in-flight keep-alive connections, each posting one body at a time
//!     WS:   one connection, at most --in-flight messages unacknowledged
//!  ◀─ returns once every body is acknowledged (200 / ack); 503 and nacks that are not a
//!     bad record are retried with backoff, at most --retries times each
//! ```
//!
//! A record counts as sent only once the server acknowledged it, which it does only after
//! Kafka did. A retry after a refusal or a lost connection may write a record twice (the
//! server's delivery is at least once); a run without retries writes each exactly once.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::StatusCode;
use sleet_avro::framed::{push_framed, CONTENT_TYPE as AVRO_BATCH_CONTENT_TYPE};
use sleet_exec::RawRecords;
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::gen_gateway::RecordSender;

const BACKOFF_FIRST: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// How long one request or message may wait for its answer: beyond the server's own ack
/// timeout (10 s by default), so the server answers first.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// How the generator talks to the ingest server.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// `host:port` of the server.
    pub address: String,
    pub avro: bool,
    /// Records per request or message.
    pub batch: usize,
    /// HTTP requests in flight (connections), or WebSocket messages unacknowledged.
    pub in_flight: usize,
    /// Retries of one request or message refused with 503 (or nacked for the same reasons),
    /// or whose connection broke, before the run gives up.
    pub retries: u32,
    /// The bearer token, if the server wants one.
    pub token: Option<String>,
}

impl ClientSettings {
    fn authorization(&self) -> Option<String> {
        self.token.as_ref().map(|token| format!("Bearer {token}"))
    }
}

/// `records` cut into bodies of `batch` records each: a JSON array of them, or each
/// length-prefixed (`sleet_avro::framed`).
fn bodies(records: &RawRecords, batch: usize, avro: bool) -> Vec<Vec<u8>> {
    let all: Vec<&[u8]> = records.iter().collect();
    all.chunks(batch.max(1))
        .map(|chunk| {
            let mut body = Vec::with_capacity(chunk.iter().map(|record| record.len() + 4).sum::<usize>() + 2);
            if avro {
                for record in chunk {
                    push_framed(record, &mut body);
                }
            } else {
                body.push(b'[');
                for (index, record) in chunk.iter().enumerate() {
                    if index > 0 {
                        body.push(b',');
                    }
                    body.extend_from_slice(record);
                }
                body.push(b']');
            }
            body
        })
        .collect()
}

/// Doubles the wait between attempts up to `BACKOFF_MAX`, and refuses past `retries`.
struct Backoff {
    attempts: u32,
    retries: u32,
    wait: Duration,
}

impl Backoff {
    fn new(retries: u32) -> Backoff {
        Backoff { attempts: 0, retries, wait: BACKOFF_FIRST }
    }

    async fn retry(&mut self, what: &str, reason: &str) -> Result<()> {
        self.attempts += 1;
        if self.attempts > self.retries {
            bail!("{what}: gave up after {} retries: {reason}", self.retries);
        }
        tokio::time::sleep(self.wait).await;
        self.wait = (self.wait * 2).min(BACKOFF_MAX);
        Ok(())
    }
}

fn current_thread_runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("a runtime for the ingest client")
}

/// Posts bodies to `POST /v1/records` over `in_flight` keep-alive connections.
pub struct HttpSender {
    runtime: Runtime,
    settings: ClientSettings,
    connections: Vec<Option<SendRequest<Full<Bytes>>>>,
}

enum Answer {
    Acknowledged,
    /// Worth another try: a 503, or the connection broke.
    Retry(String),
    Refused(String),
}

impl HttpSender {
    pub fn new(settings: ClientSettings) -> Result<HttpSender> {
        let connections = (0..settings.in_flight.max(1)).map(|_| None).collect();
        Ok(HttpSender { runtime: current_thread_runtime()?, settings, connections })
    }
}

impl RecordSender for HttpSender {
    fn send(&mut self, _partition: u32, records: &RawRecords, _keys: &[String], _timestamp_ms: i64) -> Result<()> {
        let queue = RefCell::new(VecDeque::from(bodies(records, self.settings.batch, self.settings.avro)));
        let settings = &self.settings;
        let workers = self.connections.iter_mut().map(|connection| {
            let queue = &queue;
            async move {
                loop {
                    let Some(body) = queue.borrow_mut().pop_front() else { return Ok::<(), anyhow::Error>(()) };
                    post(connection, settings, Bytes::from(body)).await?;
                }
            }
        });
        self.runtime.block_on(futures_util::future::try_join_all(workers)).map(|_| ())
    }
}

/// Posts `body` until it is acknowledged, retrying what may succeed later.
async fn post(connection: &mut Option<SendRequest<Full<Bytes>>>, settings: &ClientSettings, body: Bytes) -> Result<()> {
    let mut backoff = Backoff::new(settings.retries);
    let what = format!("posting to http://{}/v1/records", settings.address);
    loop {
        match post_once(connection, settings, body.clone()).await {
            Answer::Acknowledged => return Ok(()),
            Answer::Retry(reason) => backoff.retry(&what, &reason).await?,
            Answer::Refused(reason) => bail!("{what}: {reason}"),
        }
    }
}

async fn post_once(
    connection: &mut Option<SendRequest<Full<Bytes>>>,
    settings: &ClientSettings,
    body: Bytes,
) -> Answer {
    let exchange = async {
        if connection.as_ref().is_none_or(SendRequest::is_closed) {
            *connection = Some(connect_http(&settings.address).await?);
        }
        let sender = connection.as_mut().expect("connected above");
        sender.ready().await?;
        let mut request = hyper::Request::post("/v1/records").header(hyper::header::HOST, &settings.address).header(
            hyper::header::CONTENT_TYPE,
            if settings.avro { AVRO_BATCH_CONTENT_TYPE } else { "application/json" },
        );
        if let Some(authorization) = settings.authorization() {
            request = request.header(hyper::header::AUTHORIZATION, authorization);
        }
        let response = sender.send_request(request.body(Full::new(body))?).await?;
        let status = response.status();
        let text = response.into_body().collect().await?.to_bytes();
        Ok::<_, anyhow::Error>((status, String::from_utf8_lossy(&text).into_owned()))
    };
    match tokio::time::timeout(ANSWER_TIMEOUT, exchange).await {
        Ok(Ok((StatusCode::OK, _))) => Answer::Acknowledged,
        Ok(Ok((StatusCode::SERVICE_UNAVAILABLE, text))) => Answer::Retry(format!("503 {text}")),
        Ok(Ok((status, text))) => Answer::Refused(format!("the server answered {status}: {text}")),
        Ok(Err(error)) => {
            *connection = None;
            Answer::Retry(format!("{error:#}"))
        }
        Err(_) => {
            *connection = None;
            Answer::Retry(format!("no answer within {ANSWER_TIMEOUT:?}"))
        }
    }
}

async fn connect_http(address: &str) -> Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(address).await.with_context(|| format!("connecting to {address}"))?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    // The connection's I/O runs beside the requests; it ends when the sender is dropped.
    tokio::spawn(connection);
    Ok(sender)
}

/// Streams messages over `GET /v1/stream`, at most `in_flight` unacknowledged.
pub struct WsSender {
    runtime: Runtime,
    settings: ClientSettings,
    socket: Option<WebSocketStream<TcpStream>>,
    next_id: u64,
}

/// A server's answer message: `{"ack": [ids]}` and/or `{"nack": [{"id", "error", "records"}]}`.
#[derive(serde::Deserialize)]
struct Answers {
    #[serde(default)]
    ack: Vec<u64>,
    #[serde(default)]
    nack: Vec<Nack>,
}

#[derive(serde::Deserialize)]
struct Nack {
    id: Option<u64>,
    error: String,
    /// Present when records were bad: no retry can help.
    records: Option<serde_json::Value>,
}

impl WsSender {
    pub fn new(settings: ClientSettings) -> Result<WsSender> {
        Ok(WsSender { runtime: current_thread_runtime()?, settings, socket: None, next_id: 0 })
    }

    /// Message `id` carrying `body`: JSON text for JSON, the id then the records for Avro.
    fn message(&self, id: u64, body: &[u8]) -> Message {
        if self.settings.avro {
            let mut bytes = Vec::with_capacity(8 + body.len());
            bytes.extend_from_slice(&id.to_be_bytes());
            bytes.extend_from_slice(body);
            Message::Binary(bytes.into())
        } else {
            let records = String::from_utf8_lossy(body);
            Message::Text(format!(r#"{{"id":{id},"records":{records}}}"#).into())
        }
    }
}

impl RecordSender for WsSender {
    fn send(&mut self, _partition: u32, records: &RawRecords, _keys: &[String], _timestamp_ms: i64) -> Result<()> {
        let mut queue = VecDeque::new();
        for body in bodies(records, self.settings.batch, self.settings.avro) {
            let id = self.next_id;
            self.next_id += 1;
            queue.push_back((id, self.message(id, &body), Backoff::new(self.settings.retries)));
        }
        let Self { runtime, settings, socket, .. } = self;
        runtime.block_on(stream_all(socket, settings, queue))
    }
}

async fn stream_all(
    socket: &mut Option<WebSocketStream<TcpStream>>,
    settings: &ClientSettings,
    mut queue: VecDeque<(u64, Message, Backoff)>,
) -> Result<()> {
    let what = format!("streaming to ws://{}/v1/stream", settings.address);
    // Sent and not answered yet; a message is either here or in `queue`.
    let mut pending: HashMap<u64, (Message, Backoff)> = HashMap::new();
    let mut reconnects = Backoff::new(settings.retries);
    while !queue.is_empty() || !pending.is_empty() {
        if socket.is_none() {
            match connect_ws(settings).await {
                Ok(connected) => *socket = Some(connected),
                Err(error) => {
                    reconnects.retry(&what, &format!("{error:#}")).await?;
                    continue;
                }
            }
        }
        let connection = socket.as_mut().expect("connected above");
        let step = if pending.len() < settings.in_flight.max(1) && !queue.is_empty() {
            let (id, message, backoff) = queue.pop_front().expect("not empty");
            let sent = connection.send(message.clone()).await;
            pending.insert(id, (message, backoff));
            sent.map_err(|error| error.to_string())
        } else {
            match tokio::time::timeout(ANSWER_TIMEOUT, connection.next()).await {
                Ok(Some(Ok(Message::Text(text)))) => {
                    let answers: Answers = serde_json::from_str(text.as_str())
                        .with_context(|| format!("{what}: an answer that is not acks or nacks: {text}"))?;
                    for id in answers.ack {
                        pending.remove(&id);
                    }
                    for nack in answers.nack {
                        let (Some(id), None) = (nack.id, &nack.records) else {
                            bail!("{what}: refused: {} {}", nack.error, nack.records.unwrap_or_default());
                        };
                        let Some((message, mut backoff)) = pending.remove(&id) else {
                            bail!("{what}: a nack of message {id}, which is not pending: {}", nack.error);
                        };
                        backoff.retry(&format!("{what}: message {id}"), &nack.error).await?;
                        queue.push_front((id, message, backoff));
                    }
                    Ok(())
                }
                Ok(Some(Ok(Message::Close(frame)))) => Err(format!("the server closed the connection: {frame:?}")),
                Ok(Some(Ok(_))) => Ok(()),
                Ok(Some(Err(error))) => Err(error.to_string()),
                Ok(None) => Err("the connection ended".to_string()),
                Err(_) => Err(format!("no answer within {ANSWER_TIMEOUT:?}")),
            }
        };
        if let Err(reason) = step {
            // Whatever was unacknowledged is sent again on a new connection, in id order.
            *socket = None;
            reconnects.retry(&what, &reason).await?;
            let mut unanswered: Vec<(u64, (Message, Backoff))> = pending.drain().collect();
            unanswered.sort_unstable_by_key(|(id, _)| std::cmp::Reverse(*id));
            for (id, (message, backoff)) in unanswered {
                queue.push_front((id, message, backoff));
            }
        }
    }
    Ok(())
}

async fn connect_ws(settings: &ClientSettings) -> Result<WebSocketStream<TcpStream>> {
    let address = &settings.address;
    let mut request = format!("ws://{address}/v1/stream").into_client_request()?;
    if let Some(authorization) = settings.authorization() {
        request.headers_mut().insert("authorization", HeaderValue::from_str(&authorization)?);
    }
    let stream = TcpStream::connect(address).await.with_context(|| format!("connecting to {address}"))?;
    stream.set_nodelay(true)?;
    let (socket, _) = tokio_tungstenite::client_async(request, stream)
        .await
        .map_err(|error| anyhow!("upgrading to a WebSocket at {address}: {error}"))?;
    Ok(socket)
}

#[cfg(test)]
mod tests {
    use sleet_avro::framed::framed_records;

    use super::*;

    fn records(texts: &[&str]) -> RawRecords {
        let mut records = RawRecords::new();
        for text in texts {
            records.push(text.as_bytes());
        }
        records
    }

    #[test]
    fn json_bodies_are_arrays_of_batch_records() {
        let bodies = bodies(&records(&["{\"a\":1}", "{\"a\":2}", "{\"a\":3}"]), 2, false);
        let texts: Vec<&str> = bodies.iter().map(|body| std::str::from_utf8(body).expect("utf-8")).collect();
        assert_eq!(texts, vec!["[{\"a\":1},{\"a\":2}]", "[{\"a\":3}]"]);
    }

    #[test]
    fn avro_bodies_frame_each_record() {
        let bodies = bodies(&records(&["xy", "", "z"]), 2, true);
        let split: Vec<Vec<&[u8]>> =
            bodies.iter().map(|body| framed_records(body).collect::<Result<_, _>>().expect("framed")).collect();
        assert_eq!(split, vec![vec![&b"xy"[..], b""], vec![b"z"]]);
    }
}
