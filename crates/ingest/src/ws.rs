//! `GET /v1/stream`: records over a WebSocket. Each message carries an id and one record or a
//! batch: a text message of JSON for a JSON server, a binary one (the id, 8 bytes
//! big-endian, then length-prefixed Avro records) for an Avro server. The server answers
//! `{"ack": [ids…]}` once Kafka has acknowledged a message's records, or
//! `{"nack": [{"id": …, "error": …}]}` when it refuses them.
//!
//! ```text
//!  socket ─read─▶ parse, check ─▶ Ingest::hand_over ─▶ pending (≤ ws_pending_max)
//!                      │ bad                                │ Kafka's answer
//!                      ▼                                    ▼
//!                   outbox ◀────────────────────────── ack / nack
//!                      │ one message per flush, queue ≤ ws_outgoing_max
//!                      ▼
//!              writer task ─write─▶ socket
//! ```
//!
//! Memory per connection is bounded: at most `ws_pending_max` messages wait for Kafka (the
//! server stops reading while at it), and at most `ws_outgoing_max` answer messages wait for
//! a client that does not read them; beyond that the connection is closed with a reason.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{close_code, CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::Response;
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, SinkExt, StreamExt};
use serde_json::value::RawValue;
use sleet_exec::RawRecords;
use tokio::sync::{mpsc, oneshot};

use crate::format::{BadBody, JsonFormat, RecordFormat};
use crate::refusal::Refusal;
use crate::server::{bad_records_message, refusal_response, Ingest};

/// How long writing one answer message may take before the client counts as not reading.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(serde::Deserialize)]
struct Envelope<'a> {
    id: u64,
    #[serde(borrow)]
    record: Option<&'a RawValue>,
    #[serde(borrow)]
    records: Option<Vec<&'a RawValue>>,
}

/// Acks and nacks gathered since the last flush.
#[derive(Default)]
struct Outbox {
    acks: Vec<u64>,
    nacks: Vec<serde_json::Value>,
}

impl Outbox {
    fn nack(&mut self, id: Option<u64>, error: String, records: Option<serde_json::Value>) {
        let mut nack = serde_json::json!({ "id": id, "error": error });
        if let Some(records) = records {
            nack["records"] = records;
        }
        self.nacks.push(nack);
    }

    fn take_message(&mut self) -> Option<Message> {
        let mut body = serde_json::Map::new();
        if !self.acks.is_empty() {
            body.insert("ack".to_string(), serde_json::json!(std::mem::take(&mut self.acks)));
        }
        if !self.nacks.is_empty() {
            body.insert("nack".to_string(), serde_json::Value::Array(std::mem::take(&mut self.nacks)));
        }
        (!body.is_empty()).then(|| Message::Text(Utf8Bytes::from(serde_json::Value::Object(body).to_string())))
    }
}

pub async fn upgrade(State(ingest): State<Arc<Ingest>>, upgrade: WebSocketUpgrade) -> Response {
    if ingest.shutting_down() {
        return refusal_response(&Refusal::ShuttingDown);
    }
    let live = ingest.ws_connections.enter();
    upgrade.max_message_size(ingest.body_bytes_max).max_frame_size(ingest.body_bytes_max).on_upgrade(
        move |socket| async move {
            connection(&ingest, socket).await;
            drop(live);
        },
    )
}

async fn connection(ingest: &Ingest, socket: WebSocket) {
    let (sink, mut stream) = socket.split();
    let (outgoing, outgoing_rx) = mpsc::channel::<Message>(ingest.ws_outgoing_max);
    let writer = tokio::spawn(write_answers(sink, outgoing_rx));
    let mut pending = FuturesUnordered::new();
    let mut outbox = Outbox::default();
    let mut shutdown = ingest.shutdown.clone();
    let mut reading = true;
    let close = loop {
        if !reading && pending.is_empty() {
            break if ingest.shutting_down() { Some((close_code::AWAY, "the server is shutting down")) } else { None };
        }
        tokio::select! {
            message = stream.next(), if reading && pending.len() < ingest.ws_pending_max => match message {
                Some(Ok(message @ (Message::Text(_) | Message::Binary(_)))) => {
                    let received = Instant::now();
                    let read = match (&message, ingest.format.is_avro()) {
                        (Message::Text(text), false) => read_message(ingest, text.as_str(), received),
                        (Message::Binary(bytes), true) => read_binary(ingest, bytes, received),
                        (_, true) => Err((None, "this server takes Avro: send binary messages".to_string(), None)),
                        (_, false) => Err((None, "binary messages are not accepted; send JSON text".to_string(), None)),
                    };
                    match read {
                        Ok((id, answer)) => pending.push(async move { (id, ingest.await_answer(answer).await) }),
                        Err((id, error, records)) => outbox.nack(id, error, records),
                    }
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                // The client is done sending: answer what is pending, then close.
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => reading = false,
            },
            Some((id, outcome)) = pending.next(), if !pending.is_empty() => {
                answer(ingest, &mut outbox, id, outcome);
                while let Some(Some((id, outcome))) = pending.next().now_or_never() {
                    answer(ingest, &mut outbox, id, outcome);
                }
            }
            _ = shutdown.wait_for(|stopping| *stopping), if reading => reading = false,
        }
        if let Some(message) = outbox.take_message() {
            if outgoing.try_send(message).is_err() {
                break Some((
                    close_code::POLICY,
                    "acknowledgements are not being read; closing (unanswered messages were not acknowledged)",
                ));
            }
        }
    };
    // Messages still pending are abandoned: their submissions' replies drop with them, so the
    // writer skips whatever it has not written yet, and nothing unacknowledged is claimed.
    drop(pending);
    if let Some((code, reason)) = close {
        if code == close_code::POLICY {
            eprintln!("sleet ingest: closing a WebSocket client: {reason}");
        }
        // A client that does not read may not take even this; the writer gives up after its timeout.
        let _ = outgoing.try_send(Message::Close(Some(CloseFrame { code, reason: Utf8Bytes::from_static(reason) })));
    }
    drop(outgoing);
    let _ = tokio::time::timeout(WRITE_TIMEOUT * 2, writer).await;
}

/// A message's id and the Kafka answer to wait for, or the nack (id if known, error, bad
/// records if any) to send at once.
type ReadOutcome =
    Result<(u64, oneshot::Receiver<Result<(), Refusal>>), (Option<u64>, String, Option<serde_json::Value>)>;

/// Parses, checks and hands over one text message (JSON).
fn read_message(ingest: &Ingest, text: &str, received: Instant) -> ReadOutcome {
    let envelope: Envelope = serde_json::from_str(text).map_err(|error| {
        (
            None,
            format!("not a message `{{\"id\": N, \"record\": {{…}}}}` or `{{\"id\": N, \"records\": […]}}`: {error}"),
            None,
        )
    })?;
    let id = envelope.id;
    let values = match (envelope.record, envelope.records) {
        (Some(record), None) => JsonFormat::records_of([record]),
        (None, Some(records)) if !records.is_empty() => JsonFormat::records_of(records),
        (None, Some(_)) => return Err((Some(id), "`records` holds no records".to_string(), None)),
        _ => return Err((Some(id), "a message has exactly one of `record` and `records`".to_string(), None)),
    };
    check_and_hand_over(ingest, id, values, received)
}

/// Parses, checks and hands over one binary message (Avro): the id, 8 bytes big-endian, then
/// the records framed as an HTTP body is.
fn read_binary(ingest: &Ingest, bytes: &[u8], received: Instant) -> ReadOutcome {
    let Some((id, body)) = bytes.split_first_chunk::<8>() else {
        return Err((
            None,
            format!("a binary message starts with its 8-byte id; this one has {} bytes", bytes.len()),
            None,
        ));
    };
    let id = u64::from_be_bytes(*id);
    let values = ingest.format.split_body(body).map_err(|BadBody(reason)| (Some(id), reason, None))?;
    check_and_hand_over(ingest, id, values, received)
}

fn check_and_hand_over(ingest: &Ingest, id: u64, values: RawRecords, received: Instant) -> ReadOutcome {
    let count = values.len();
    let keys = ingest.format.check(&values).map_err(|bad| {
        ingest.stats.refused(count);
        // The first bad record in the error itself, so a client that logs only the error
        // still learns which record and field; all of them are in `records`.
        let first =
            bad.first().map(|record| format!(": record {}: {}", record.index, record.error)).unwrap_or_default();
        (Some(id), format!("{}{first}", bad_records_message(&bad, count)), serde_json::to_value(&bad).ok())
    })?;
    ingest.hand_over(values, keys, received).map(|answer| (id, answer)).map_err(|refusal| {
        ingest.stats.refused(count);
        (Some(id), refusal.to_string(), None)
    })
}

fn answer(ingest: &Ingest, outbox: &mut Outbox, id: u64, outcome: Result<(), Refusal>) {
    match outcome {
        Ok(()) => outbox.acks.push(id),
        Err(refusal) => {
            ingest.stats.refused(0);
            outbox.nack(Some(id), refusal.to_string(), None)
        }
    }
}

/// Writes answers in order; stops when the queue closes, or when one write takes longer
/// than `WRITE_TIMEOUT` (a client that does not read).
async fn write_answers(
    mut sink: futures_util::stream::SplitSink<WebSocket, Message>,
    mut answers: mpsc::Receiver<Message>,
) {
    while let Some(message) = answers.recv().await {
        let closing = matches!(message, Message::Close(_));
        match tokio::time::timeout(WRITE_TIMEOUT, sink.send(message)).await {
            Ok(Ok(())) if !closing => {}
            _ => return,
        }
    }
}
