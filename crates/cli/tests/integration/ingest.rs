//! `sleet ingest` against a real Kafka broker: records acknowledged over HTTP and WebSocket
//! are read back from Kafka (keys, partitions, bytes); bad input, oversized bodies, a wrong
//! token, an absent broker and a client that does not read are refused without harm; and
//! after a SIGKILL mid-run every acknowledged record is in Kafka.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::kafka::{brokers, fresh_topic};
use common::{sleet, test_dir, Reaper};
use sleet_kafka::admin::ensure_topic;
use sleet_kafka::cluster::Cluster;
use sleet_kafka::fetch::{FetchSettings, PartitionReader};
use sleet_kafka::offsets::OffsetQuery;

const PARTITIONS: u32 = 3;
const SCHEMA: &str = r#"{"fields": [
    {"name": "gateway_id", "data_type": "utf8"},
    {"name": "ts", "data_type": "int64"},
    {"name": "bytes_in", "data_type": "int64"},
    {"name": "note", "data_type": "utf8", "nullable": true}
]}"#;

/// A running `sleet ingest`, killed when dropped.
struct Server {
    address: String,
    reaper: Reaper,
    /// Reads what the server prints after its address (its final figures) until it exits.
    rest_of_stdout: Option<std::thread::JoinHandle<String>>,
}

impl Server {
    fn start(name: &str, brokers: &str, topic: &str, extra: &[&str], token: Option<&str>) -> Server {
        let dir = test_dir(name);
        let schema = dir.join("schema.json");
        std::fs::write(&schema, SCHEMA).expect("writing the schema");
        Server::start_with_schema(brokers, topic, &schema, extra, token)
    }

    fn start_with_schema(brokers: &str, topic: &str, schema: &Path, extra: &[&str], token: Option<&str>) -> Server {
        let mut command = sleet();
        command
            .args(["ingest", "--listen", "127.0.0.1:0", "--brokers", brokers, "--topic", topic, "--key", "gateway_id"])
            .arg("--schema")
            .arg(schema)
            .args(extra)
            .env_remove("SLEET_INGEST_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(token) = token {
            command.env("SLEET_INGEST_TOKEN", token);
        }
        let mut child = command.spawn().expect("starting sleet ingest");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut address = String::new();
        stdout.read_line(&mut address).expect("reading the address");
        let address = address.trim().to_string();
        assert!(!address.is_empty(), "sleet ingest printed no address");
        // Keep draining stdout so the final figures never block the process.
        let rest_of_stdout = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stdout.read_to_string(&mut rest);
            rest
        });
        Server { address, reaper: Reaper(vec![child]), rest_of_stdout: Some(rest_of_stdout) }
    }

    fn child(&mut self) -> &mut Child {
        &mut self.reaper.0[0]
    }

    /// Stops the server as an operator would (SIGTERM) and returns its exit status and what
    /// it printed after its address.
    fn terminate(&mut self) -> (std::process::ExitStatus, String) {
        let pid = self.child().id() as i32;
        // SAFETY: signalling a child this test started and has not reaped.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let status = common::wait_with_limit(self.child(), Duration::from_secs(40));
        let rest =
            self.rest_of_stdout.take().map(|reader| reader.join().expect("the stdout reader")).unwrap_or_default();
        (status, rest)
    }
}

struct Reply {
    status: u16,
    headers: String,
    body: String,
}

/// One HTTP/1.1 request on a fresh connection: a raw client keeps the tests' dependency
/// tree small and shows exactly what goes over the wire.
fn http(address: &str, method: &str, path: &str, token: Option<&str>, body: &[u8]) -> std::io::Result<Reply> {
    http_typed(address, method, path, token, "application/json", body)
}

fn http_typed(
    address: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let auth = token.map(|token| format!("Authorization: Bearer {token}\r\n")).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: {content_type}\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8_lossy(&response).into_owned();
    let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = headers.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    Ok(Reply { status, headers: headers.to_string(), body: body.to_string() })
}

fn post(address: &str, body: &str) -> Reply {
    http(address, "POST", "/v1/records", None, body.as_bytes()).expect("POST /v1/records")
}

fn new_topic(name: &str) -> String {
    let topic = fresh_topic(name);
    ensure_topic(&mut Cluster::new(brokers()), &topic, PARTITIONS).expect("creating the topic");
    topic
}

/// Every record of `topic` as `read_committed` sees it: (partition, key, value).
fn read_topic(topic: &str) -> Vec<(u32, String, String)> {
    let mut found = Vec::new();
    for partition in 0..PARTITIONS {
        let mut reader = PartitionReader::new(brokers(), topic, partition, FetchSettings::default());
        let end = reader.offset(OffsetQuery::Latest).expect("the last stable offset");
        let mut position = reader.offset(OffsetQuery::Earliest).expect("the earliest offset");
        for _ in 0..10_000 {
            if position >= end {
                break;
            }
            position = reader
                .fetch(position, end, &mut |record| {
                    let text = |bytes: Option<&[u8]>| String::from_utf8_lossy(bytes.unwrap_or_default()).into_owned();
                    found.push((partition, text(record.key), text(record.value)));
                })
                .expect("fetching");
        }
        assert!(position >= end, "partition {partition} was not read to its end {end}");
    }
    found
}

/// The partition Kafka's default partitioner picks for `key` over `PARTITIONS`, as sleet's
/// partitioner computes it (its unit tests check it against the Java client's own values).
fn partition_of(key: &str) -> u32 {
    sleet_kafka::partitioner::murmur2_partition(key.as_bytes(), PARTITIONS)
}

fn record(gateway: &str, ts: i64) -> String {
    format!(r#"{{"gateway_id": "{gateway}", "ts": {ts}, "bytes_in": {}}}"#, ts * 7)
}

#[test]
fn records_posted_are_acknowledged_then_found_in_kafka_where_murmur2_puts_them() {
    let topic = new_topic("ingest-http");
    let server = Server::start("ingest_http", brokers(), &topic, &[], None);

    let single = record("gw-42", 1);
    let reply = post(&server.address, &single);
    assert_eq!((reply.status, reply.body.as_str()), (200, r#"{"records":1}"#), "{}", reply.headers);

    // Odd spacing and key order inside records: the values in Kafka are the bytes sent.
    let batch: Vec<String> = (0..60)
        .map(|index| match index % 3 {
            0 => record(&format!("gateway-{index:04}"), index),
            1 => format!(r#"{{ "ts" : {index},"gateway_id":"gw-{index}", "bytes_in": 1, "note": null }}"#),
            _ => format!(r#"{{"bytes_in":2,"note":"tab\there","gateway_id":"g\u00e9-{index}","ts":{index}}}"#),
        })
        .collect();
    let body = format!("[\n  {}\n]", batch.join(",\n  "));
    let reply = post(&server.address, &body);
    assert_eq!((reply.status, reply.body.as_str()), (200, r#"{"records":60}"#));

    let mut expected: Vec<(u32, String, String)> = std::iter::once(single)
        .chain(batch)
        .map(|value| {
            let parsed: serde_json::Value = serde_json::from_str(&value).expect("the test's records are JSON");
            let key = parsed["gateway_id"].as_str().expect("a string key").to_string();
            (partition_of(&key), key, value)
        })
        .collect();
    let mut found = read_topic(&topic);
    expected.sort();
    found.sort();
    assert_eq!(found, expected, "Kafka holds each record once, under its key, in murmur2's partition");
    let partitions_used: BTreeSet<u32> = found.iter().map(|(partition, _, _)| *partition).collect();
    assert_eq!(partitions_used.len(), PARTITIONS as usize, "the keys spread over every partition");

    let stats = http(&server.address, "GET", "/v1/stats", None, b"").expect("GET /v1/stats");
    let stats: serde_json::Value = serde_json::from_str(&stats.body).expect("stats are JSON");
    assert_eq!(stats["records_accepted"], 61, "{stats}");
    assert!(stats["cpu_us_per_record"].as_f64().is_some_and(|cpu| cpu > 0.0), "{stats}");
}

#[test]
fn bad_requests_are_refused_whole_naming_record_and_field_and_nothing_is_written() {
    let topic = new_topic("ingest-bad");
    let server = Server::start("ingest_bad", brokers(), &topic, &["--body-bytes-max", "2048"], Some("s3cret"));
    let auth = Some("s3cret");
    let post = |body: &str| http(&server.address, "POST", "/v1/records", auth, body.as_bytes()).expect("POST");

    let reply = post(r#"[{"gateway_id": "a", "ts": 1, "bytes_in": 1}, {"gateway_id": "#);
    assert_eq!(reply.status, 400, "malformed JSON: {}", reply.body);
    assert!(reply.body.contains("malformed JSON"), "{}", reply.body);

    let batch = [
        record("a", 1),
        record("b", 2),
        r#"{"ts": 3, "bytes_in": 3}"#.to_string(),
        record("d", 4),
        r#"{"gateway_id": "e", "ts": "five", "bytes_in": 5}"#.to_string(),
        r#"{"gateway_id": null, "ts": 6, "bytes_in": 6}"#.to_string(),
        r#"{"gateway_id": 7, "ts": 7, "bytes_in": 7}"#.to_string(),
        "17".to_string(),
    ];
    let reply = post(&format!("[{}]", batch.join(",")));
    assert_eq!(reply.status, 400, "{}", reply.body);
    let body: serde_json::Value = serde_json::from_str(&reply.body).expect("a JSON error");
    let bad: BTreeMap<u64, String> = body["records"]
        .as_array()
        .expect("the bad records")
        .iter()
        .map(|bad| (bad["index"].as_u64().expect("an index"), bad["error"].as_str().expect("a reason").to_string()))
        .collect();
    assert_eq!(bad.keys().copied().collect::<Vec<_>>(), [2, 4, 5, 6, 7], "{body}");
    for (index, field) in [(2, "gateway_id"), (4, "ts"), (5, "gateway_id"), (6, "gateway_id")] {
        assert!(bad[&index].contains(&format!("`{field}`")), "record {index} names field {field}: {}", bad[&index]);
    }
    assert!(body["error"].as_str().is_some_and(|error| error.contains("none of the request was written")), "{body}");

    let reply = post(&format!("[{}]", vec![record("big", 1); 60].join(",")));
    assert_eq!(reply.status, 413, "a body over --body-bytes-max: {}", reply.headers);

    for token in [None, Some("s3cre"), Some("s3cret!"), Some("S3cret"), Some("")] {
        let reply = http(&server.address, "POST", "/v1/records", token, record("t", 1).as_bytes()).expect("POST");
        assert_eq!(reply.status, 401, "token {token:?}");
    }
    assert_eq!(http(&server.address, "GET", "/v1/stats", None, b"").expect("GET").status, 401);

    // Kafka has none of the refused records; then one good request shows the topic works.
    assert_eq!(read_topic(&topic), Vec::new(), "refused requests wrote nothing");
    assert_eq!(post(&record("good", 1)).status, 200);
    assert_eq!(read_topic(&topic).len(), 1);
}

/// A long linger holds the first request's records in flight: a second request that would
/// pass the in-flight bound is refused at once with 503, one that never fits with 413, and
/// once the first is acknowledged there is room again.
#[test]
fn records_in_flight_at_their_bound_get_503_with_retry_after() {
    let topic = new_topic("ingest-bound");
    let limits = ["--records-in-flight-max", "10", "--linger", "1500ms"];
    let server = Server::start("ingest_bound", brokers(), &topic, &limits, None);
    let batch = |count: usize, name: &str| {
        let records: Vec<String> = (0..count).map(|index| record(&format!("{name}-{index}"), index as i64)).collect();
        format!("[{}]", records.join(","))
    };
    let first = {
        let (address, body) = (server.address.clone(), batch(8, "first"));
        std::thread::spawn(move || post(&address, &body))
    };
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let refused = post(&server.address, &batch(5, "second"));
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(refused.headers.to_ascii_lowercase().contains("retry-after:"), "{}", refused.headers);
    assert!(started.elapsed() < Duration::from_millis(1000), "refused at once, not after {:?}", started.elapsed());
    assert_eq!(post(&server.address, &batch(11, "never")).status, 413, "more records than the bound");
    assert_eq!(first.join().expect("the first client").status, 200);
    assert_eq!(post(&server.address, &batch(5, "third")).status, 200, "room again");
    let mut keys: Vec<String> = read_topic(&topic).into_iter().map(|(_, key, _)| key).collect();
    keys.sort();
    let mut expected: Vec<String> =
        (0..8).map(|index| format!("first-{index}")).chain((0..5).map(|index| format!("third-{index}"))).collect();
    expected.sort();
    assert_eq!(keys, expected, "only the acknowledged requests were written");
}

#[test]
fn without_kafka_requests_are_refused_with_503_within_the_ack_timeout() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("address").port();
    let absent = format!("127.0.0.1:{port}");
    let mut server = Server::start("ingest_no_kafka", &absent, "nowhere", &["--ack-timeout", "2s"], None);
    for attempt in 0..3 {
        let started = Instant::now();
        let reply = post(&server.address, &record("gw", attempt));
        assert_eq!(reply.status, 503, "{}", reply.body);
        assert!(reply.headers.to_ascii_lowercase().contains("retry-after:"), "{}", reply.headers);
        assert!(started.elapsed() < Duration::from_secs(4), "refused after {:?}", started.elapsed());
    }
    assert!(server.child().try_wait().expect("polling").is_none(), "the server is still running");
    let stats = http(&server.address, "GET", "/v1/stats", None, b"").expect("GET /v1/stats");
    assert!(stats.body.contains(r#""records_refused":3"#), "{}", stats.body);
}

#[test]
fn clients_that_stall_mid_request_are_closed_and_their_slots_serve_others() {
    let topic = new_topic("ingest-stall");
    let server =
        Server::start("ingest_stall", brokers(), &topic, &["--connections-max", "2", "--idle-timeout", "1s"], None);
    // Every slot taken by a client that sends half a request head and then nothing.
    let mut stalled: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut stream = TcpStream::connect(&server.address).expect("connecting");
            stream.write_all(b"POST /v1/records HTTP/1.1\r\nHost: stalled\r\n").expect("half a head");
            stream
        })
        .collect();
    let reply = post(&server.address, &record("gw-after-the-stall", 5));
    assert_eq!(reply.status, 200, "served once a stalled client's slot was freed: {}", reply.body);
    for stream in &mut stalled {
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
        let mut rest = Vec::new();
        // The server closes without answering; a reset is as good as an end of stream.
        if let Err(error) = stream.read_to_end(&mut rest) {
            assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset, "the stalled connection was closed: {error}");
        }
    }
    let found = read_topic(&topic);
    assert_eq!(found.len(), 1, "only the complete request was written: {found:?}");
}

mod websocket {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    use super::*;

    fn message(id: u64, body: &str) -> Message {
        Message::Text(format!(r#"{{"id": {id}, {body}}}"#).into())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn messages_are_acknowledged_by_id_once_kafka_has_their_records() {
        let topic = new_topic("ingest-ws");
        let server = Server::start("ingest_ws", brokers(), &topic, &[], None);
        let url = format!("ws://{}/v1/stream", server.address);
        let (mut socket, _) = tokio_tungstenite::connect_async(url).await.expect("connecting");
        for id in 1..=30 {
            let text = format!(r#""record": {}"#, record(&format!("ws-{id}"), id as i64));
            socket.send(message(id, &text)).await.expect("sending");
        }
        let batch: Vec<String> = (0..5).map(|index| record(&format!("batch-{index}"), index)).collect();
        socket.send(message(31, &format!(r#""records": [{}]"#, batch.join(",")))).await.expect("sending");
        socket.send(message(32, r#""record": {"ts": 1, "bytes_in": 2}"#)).await.expect("sending");
        socket.send(Message::Text(r#"{"id": 33, "record": {"gateway_id": "#.into())).await.expect("sending");

        let mut acked = BTreeSet::new();
        let mut nacked = BTreeMap::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while acked.len() < 31 || nacked.len() < 2 {
            let answer = tokio::time::timeout_at(deadline, socket.next())
                .await
                .expect("all answers within 30 s")
                .expect("the connection stays open")
                .expect("a message");
            let answer: serde_json::Value = serde_json::from_str(answer.to_text().expect("text")).expect("JSON");
            for id in answer["ack"].as_array().into_iter().flatten() {
                assert!(acked.insert(id.as_u64().expect("a numeric id")), "id {id} acknowledged twice");
            }
            for nack in answer["nack"].as_array().into_iter().flatten() {
                nacked.insert(nack["id"].as_u64(), nack.to_string());
            }
        }
        assert_eq!(acked, (1..=31).collect::<BTreeSet<u64>>());
        assert!(nacked[&Some(32)].contains(r#""index":0"#), "{nacked:?}");
        assert!(nacked[&Some(32)].contains("`gateway_id`"), "{nacked:?}");
        assert!(nacked.contains_key(&None), "a message that is not JSON has no id to name: {nacked:?}");
        socket.close(None).await.expect("closing");

        let found = read_topic(&topic);
        assert_eq!(found.len(), 35, "30 single records and a batch of 5, nothing of the bad message");
        for (partition, key, _) in &found {
            assert_eq!(*partition, partition_of(key), "{key}");
        }
    }

    /// A client that sends without reading its acknowledgements: the server stops reading it
    /// (TCP pushes back on the client), then closes it, and stays small and responsive.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_does_not_read_its_acks_is_closed_and_memory_stays_bounded() {
        let topic = new_topic("ingest-ws-slow");
        let mut server = Server::start("ingest_ws_slow", brokers(), &topic, &["--ws-outgoing-max", "4"], None);
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket.set_recv_buffer_size(4096).expect("a small receive buffer");
        let stream = socket.connect(server.address.parse().expect("an address")).await.expect("connecting");
        let url = format!("ws://{}/v1/stream", server.address);
        let (socket, _) = tokio_tungstenite::client_async(url, stream).await.expect("upgrading");
        let (mut sink, mut stream) = socket.split();
        let sending = tokio::spawn(async move {
            for id in 0..2_000_000u64 {
                let text = format!(r#""record": {}"#, record(&format!("slow-{}", id % 100), id as i64));
                match tokio::time::timeout(Duration::from_secs(5), sink.send(message(id, &text))).await {
                    Ok(Ok(())) => {}
                    _ => return id,
                }
            }
            u64::MAX
        });
        let sent =
            tokio::time::timeout(Duration::from_secs(120), sending).await.expect("sending stops").expect("sender");
        assert!(sent < u64::MAX, "the server kept reading a client that never read");
        let pid = server.child().id();
        let rss_kb = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .expect("the server's status")
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:").map(|rest| rest.trim().trim_end_matches(" kB").parse::<u64>()))
            .expect("VmRSS")
            .expect("a number");
        assert!(rss_kb < 200 * 1024, "the server holds {rss_kb} kB after {sent} messages");
        let ended = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(message) = stream.next().await {
                match message {
                    Ok(Message::Close(frame)) => return format!("closed: {frame:?}"),
                    Ok(_) => {}
                    Err(error) => return format!("ended: {error}"),
                }
            }
            "ended".to_string()
        })
        .await;
        assert!(ended.is_ok(), "the server did not close the connection of a client that did not read");
        let stats = http(&server.address, "GET", "/v1/stats", None, b"").expect("the server still answers");
        assert_eq!(stats.status, 200);
        assert!(server.child().try_wait().expect("polling").is_none(), "the server is still running");
    }
}

/// Clients posting batches of unique records until `stop`; the records of each 200 answer.
fn post_until(address: &str, clients: usize, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<Vec<String>>> {
    (0..clients)
        .map(|client| {
            let (address, stop) = (address.to_string(), Arc::clone(stop));
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                for round in 0..100_000 {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let notes: Vec<String> = (0..25).map(|index| format!("{client}-{round}-{index}")).collect();
                    let records: Vec<String> = notes
                        .iter()
                        .enumerate()
                        .map(|(index, note)| {
                            format!(r#"{{"gateway_id":"gw-{index}","ts":{round},"bytes_in":1,"note":"{note}"}}"#)
                        })
                        .collect();
                    match http(&address, "POST", "/v1/records", None, format!("[{}]", records.join(",")).as_bytes()) {
                        Ok(reply) if reply.status == 200 => acked.extend(notes),
                        Ok(_) => {}
                        // The server is gone (killed or stopped).
                        Err(_) => std::thread::sleep(Duration::from_millis(20)),
                    }
                }
                acked
            })
        })
        .collect()
}

/// A WebSocket client sending messages of 25 unique records, up to 4 unanswered, until
/// `stop` or the server ends the connection: the records acknowledged, and the close code if
/// the server closed with one.
fn stream_until(address: &str, stop: &Arc<AtomicBool>) -> std::thread::JoinHandle<(Vec<String>, Option<u16>)> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let (address, stop) = (address.to_string(), Arc::clone(stop));
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        runtime.block_on(async move {
            let url = format!("ws://{address}/v1/stream");
            let (socket, _) = tokio_tungstenite::connect_async(url).await.expect("connecting");
            let (mut sink, mut stream) = socket.split();
            let (mut unanswered, mut acked, mut next_id) = (BTreeMap::new(), Vec::new(), 0u64);
            loop {
                while unanswered.len() < 4 && !stop.load(Ordering::SeqCst) {
                    let notes: Vec<String> = (0..25).map(|index| format!("ws-{next_id}-{index}")).collect();
                    let records: Vec<String> = notes
                        .iter()
                        .map(|note| {
                            format!(r#"{{"gateway_id":"ws-{}","ts":1,"bytes_in":1,"note":"{note}"}}"#, next_id % 7)
                        })
                        .collect();
                    let text = format!(r#"{{"id":{next_id},"records":[{}]}}"#, records.join(","));
                    if sink.send(Message::Text(text.into())).await.is_err() {
                        break;
                    }
                    unanswered.insert(next_id, notes);
                    next_id += 1;
                }
                match tokio::time::timeout(Duration::from_secs(30), stream.next()).await {
                    Ok(Some(Ok(Message::Text(text)))) => {
                        let answer: serde_json::Value = serde_json::from_str(text.as_str()).expect("JSON");
                        for id in answer["ack"].as_array().into_iter().flatten() {
                            acked.extend(unanswered.remove(&id.as_u64().expect("an id")).expect("an id sent"));
                        }
                        for nack in answer["nack"].as_array().into_iter().flatten() {
                            unanswered.remove(&nack["id"].as_u64().expect("an id"));
                        }
                    }
                    Ok(Some(Ok(Message::Close(frame)))) => return (acked, frame.map(|frame| u16::from(frame.code))),
                    Ok(Some(Ok(_))) => {}
                    _ => return (acked, None),
                }
            }
        })
    })
}

/// Runs clients (HTTP and one WebSocket) against a fresh server, stops it with
/// `stop_server` mid-run, and checks Kafka holds every acknowledged record exactly once.
/// Returns the close code the WebSocket client saw.
fn acknowledged_records_survive(name: &str, stop_server: impl FnOnce(&mut Server)) -> Option<u16> {
    let topic = new_topic(name);
    let mut server = Server::start(&name.replace('-', "_"), brokers(), &topic, &[], None);
    let stop = Arc::new(AtomicBool::new(false));
    let clients = post_until(&server.address, 3, &stop);
    let streamer = stream_until(&server.address, &stop);
    // Mid-run: the clients have had records acknowledged and have more in flight.
    std::thread::sleep(Duration::from_secs(3));
    stop_server(&mut server);
    stop.store(true, Ordering::SeqCst);
    let mut acked: Vec<String> = clients.into_iter().flat_map(|client| client.join().expect("a client")).collect();
    let (streamed, close_code) = streamer.join().expect("the WebSocket client");
    assert!(acked.len() >= 100, "only {} records were acknowledged over HTTP before the stop", acked.len());
    assert!(streamed.len() >= 100, "only {} records were acknowledged over WebSocket", streamed.len());
    acked.extend(streamed);
    let notes: Vec<String> = read_topic(&topic)
        .into_iter()
        .map(|(_, _, value)| {
            let value: serde_json::Value = serde_json::from_str(&value).expect("JSON in Kafka");
            value["note"].as_str().expect("a note").to_string()
        })
        .collect();
    let found: BTreeSet<&String> = notes.iter().collect();
    assert_eq!(found.len(), notes.len(), "no record is in Kafka twice");
    let missing: Vec<&String> = acked.iter().filter(|note| !found.contains(note)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged records are not in Kafka: {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
    close_code
}

#[test]
fn after_a_sigkill_every_acknowledged_record_is_in_kafka() {
    let close_code = acknowledged_records_survive("ingest-kill", |server| {
        server.child().kill().expect("SIGKILL");
        server.child().wait().expect("reaped");
    });
    assert_eq!(close_code, None, "a killed server sends no close frame");
}

#[test]
fn sigterm_finishes_what_is_in_flight_and_exits_cleanly() {
    let close_code = acknowledged_records_survive("ingest-term", |server| {
        let (status, rest) = server.terminate();
        assert!(status.success(), "sleet ingest exited with {status} after SIGTERM");
        assert!(rest.contains(r#"{"stats":"#), "the final figures are printed: {rest:?}");
    });
    assert_eq!(close_code, Some(1001), "WebSocket clients are told the server is going away");
}

/// With no connection open, the server's graceful shutdown can finish before the signal is
/// seen; that race once made the server panic on its way out instead of printing its figures.
/// It lost about one stop in six, so twenty stops would all pass by chance one time in 40.
#[test]
fn an_idle_server_stopped_by_sigterm_exits_cleanly_with_its_figures_every_time() {
    let topic = new_topic("ingest-idle-stop");
    for attempt in 0..20 {
        let mut server = Server::start("ingest_idle_stop", brokers(), &topic, &[], None);
        let (status, rest) = server.terminate();
        assert!(status.success(), "attempt {attempt}: sleet ingest exited with {status}");
        assert!(rest.contains(r#"{"stats":"#), "attempt {attempt}: no figures line in {rest:?}");
    }
}

/// The gateway generator through the ingest server, over both transports in both formats,
/// into Kafka: what the topic holds is what the generator's ground truth says
/// (`gateway_check::ground_truth`, walked from the reading function, never from records), and
/// the Avro runs hold the same rows as their JSON twins.
mod gateway {
    use std::collections::BTreeMap;

    use common::kafka::read_partition;
    use sleet_avro::{RecordSchema, Value};
    use sleet_workloads::gateway_check::ground_truth;
    use sleet_workloads::gen_gateway::Produced;

    use super::*;

    const GATEWAY_PARTITIONS: u32 = 2;
    /// A fixed start, so that the four runs generate the same readings.
    const START_MS: &str = "1700000000000";

    /// A decoded reading: gateway, date, ipTx, ipRx (the doubles by their bits).
    type Row = (String, i64, u64, u64);

    fn avsc_path() -> std::path::PathBuf {
        common::kafka::repo_root().join("schemas/gateway.avsc")
    }

    fn json_schema(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("gateway_schema.json");
        let schema = serde_json::to_string(&sleet_connectors::gateway::record_schema()).expect("a schema");
        std::fs::write(&path, schema).expect("writing the schema");
        path
    }

    /// A record as its format says, read without the job's decoders.
    fn row(avro: bool, value: &[u8]) -> Row {
        if avro {
            let schema = RecordSchema::parse(sleet_avro::GATEWAY_SCHEMA).expect("the gateway schema");
            let mut fields = Vec::new();
            schema.read_single_object(value, |_, field| fields.push(field)).expect("a gateway record");
            match fields.as_slice() {
                [Value::String(id), Value::Long(date), Value::Double(tx), Value::Double(rx)] => {
                    (id.to_string(), *date, tx.to_bits(), rx.to_bits())
                }
                other => panic!("fields {other:?}"),
            }
        } else {
            let record: serde_json::Value = serde_json::from_slice(value).expect("JSON");
            let float = |name: &str| record[name].as_f64().expect(name).to_bits();
            let id = record["gateway_id"].as_str().expect("gateway_id").to_string();
            (id, record["date"].as_i64().expect("date"), float("ipTx"), float("ipRx"))
        }
    }

    /// Runs the generator into a fresh server and topic; the run's figures and the topic's
    /// rows, sorted.
    fn run(transport: &str, format: &str) -> (Produced, Vec<Row>) {
        let avro = format == "avro";
        let dir = test_dir(&format!("ingest-gateway-{transport}-{format}"));
        let schema = if avro { avsc_path() } else { json_schema(&dir) };
        let topic = fresh_topic(&format!("ingest-gateway-{transport}-{format}"));
        let partitions = GATEWAY_PARTITIONS.to_string();
        let extra = ["--format", format, "--partitions", &partitions];
        let server = Server::start_with_schema(brokers(), &topic, &schema, &extra, None);
        let mut gen = sleet();
        gen.args(["gen", "gateway", "--to", transport, "--address", &server.address, "--format", format]);
        gen.args(["--partitions", &partitions, "--gateways", "40", "--count", "3000", "--encoding", "counter"]);
        gen.args(["--late-fraction", "0.1", "--max-delay", "3m", "--seed", "5", "--start-ms", START_MS]);
        gen.args(["--batch", "70", "--in-flight", "3"]);
        let output = common::run_with_limit(gen, Duration::from_secs(120));
        common::assert_success(&output, &format!("sleet gen gateway --to {transport} --format {format}"));
        let produced: Produced = serde_json::from_slice(&output.stdout).expect("the run's JSON on stdout");
        let mut rows = Vec::new();
        for partition in 0..GATEWAY_PARTITIONS {
            for (key, value) in read_partition(&topic, partition) {
                let row = row(avro, &value);
                assert_eq!(row.0, key, "{transport} {format}: a record keyed by its gateway");
                let expected = sleet_kafka::partitioner::murmur2_partition(key.as_bytes(), GATEWAY_PARTITIONS);
                assert_eq!(expected, partition, "{transport} {format}: key {key}");
                rows.push(row);
            }
        }
        rows.sort();
        (produced, rows)
    }

    #[test]
    fn gen_gateway_through_ingest_to_kafka_matches_the_ground_truth_in_both_formats() {
        let mut runs = Vec::new();
        for (transport, format) in [("http", "json"), ("http", "avro"), ("ws", "json"), ("ws", "avro")] {
            let (produced, rows) = run(transport, format);
            assert_eq!(produced.records, rows.len() as u64, "{transport} {format}: records in Kafka");
            let mut readings = rows.iter().map(|row| (&row.0, row.1)).collect::<Vec<_>>();
            readings.dedup();
            assert_eq!(readings.len(), rows.len(), "{transport} {format}: no reading twice");
            // Under the counter encoding each reading carries its bytes since the previous one,
            // so the per-(day, gateway) sums are the ground truth's totals.
            let mut totals: BTreeMap<(i64, String), (u64, u64)> = BTreeMap::new();
            for (id, date, tx, rx) in &rows {
                let day = totals.entry((sleet_connectors::gateway::day_of(*date), id.clone())).or_default();
                day.0 += f64::from_bits(*tx) as u64;
                day.1 += f64::from_bits(*rx) as u64;
            }
            let truth: BTreeMap<(i64, String), (u64, u64)> =
                ground_truth(&produced.spec, produced.delivered_start_ms, produced.delivered_end_ms)
                    .into_iter()
                    .map(|(key, totals)| (key, (totals.tx, totals.rx)))
                    .collect();
            assert_eq!(totals, truth, "{transport} {format}: per-(day, gateway) totals");
            assert_eq!(totals.keys().map(|(_, id)| id).collect::<BTreeSet<_>>().len(), 40, "every gateway");
            runs.push(((transport, format), rows));
        }
        let (first, first_rows) = &runs[0];
        for (run, rows) in &runs[1..] {
            assert!(rows == first_rows, "{run:?} holds other rows than {first:?}");
        }
    }

    /// Avro bodies the job would dead-letter are refused whole, naming the record and why;
    /// broken framing, a wrong content type and an oversized body too; nothing is written.
    #[test]
    fn bad_avro_is_refused_naming_the_record_and_nothing_is_written() {
        use sleet_avro::framed::push_framed;

        let topic = new_topic("ingest-avro-bad");
        let extra = ["--format", "avro", "--body-bytes-max", "4096", "--record-bytes-max", "200"];
        let server = Server::start_with_schema(brokers(), &topic, &avsc_path(), &extra, None);
        let schema = RecordSchema::parse(sleet_avro::GATEWAY_SCHEMA).expect("the gateway schema");
        let encode = |id: &str| {
            let mut out = Vec::new();
            let values = [Value::String(id), Value::Long(1), Value::Double(2.0), Value::Double(3.0)];
            schema.encode_single_object(&values, &mut out).expect("a gateway record");
            out
        };
        let good = encode("gw-1");
        let mut wrong_fingerprint = good.clone();
        wrong_fingerprint[2] ^= 0xff;
        let truncated = good[..good.len() - 3].to_vec();
        let oversized = encode(&"x".repeat(300));
        let body = |records: &[&[u8]]| {
            let mut body = Vec::new();
            for record in records {
                push_framed(record, &mut body);
            }
            body
        };
        let avro_post = |body: &[u8]| {
            http_typed(&server.address, "POST", "/v1/records", None, "application/vnd.sleet.avro-batch", body)
                .expect("POST")
        };
        let reply = avro_post(&body(&[&good, b"{}", &wrong_fingerprint, &truncated, &oversized]));
        assert_eq!(reply.status, 400, "{}", reply.body);
        let answer: serde_json::Value = serde_json::from_str(&reply.body).expect("JSON");
        let bad: Vec<(u64, String)> = answer["records"]
            .as_array()
            .expect("the bad records")
            .iter()
            .map(|record| (record["index"].as_u64().expect("index"), record["error"].as_str().expect("error").into()))
            .collect();
        let indices: Vec<u64> = bad.iter().map(|(index, _)| *index).collect();
        assert_eq!(indices, vec![1, 2, 3, 4], "{bad:?}");
        for ((_, error), reason) in bad.iter().zip(["marker", "does not match", "truncated", "over the limit"]) {
            assert!(error.contains(reason), "{error} should say {reason}");
        }
        let framing = avro_post(&[body(&[&good]), vec![0, 0, 0, 9, 1]].concat());
        assert_eq!(framing.status, 400, "{}", framing.body);
        assert!(framing.body.contains("record 1"), "{}", framing.body);
        let as_json = http(&server.address, "POST", "/v1/records", None, &body(&[&good])).expect("POST");
        assert_eq!(as_json.status, 415, "{}", as_json.body);
        let too_big = avro_post(&vec![0u8; 5000]);
        assert_eq!(too_big.status, 413, "{}", too_big.body);
        // A good request afterwards is written, and only it.
        assert_eq!(avro_post(&body(&[&good, &good])).status, 200);
        let written: Vec<_> = (0..PARTITIONS).flat_map(|partition| read_partition(&topic, partition)).collect();
        assert_eq!(written.len(), 2, "only the good request is in Kafka");
        assert!(written.iter().all(|(key, value)| key == "gw-1" && *value == good));
    }

    /// Over a WebSocket, an Avro server takes binary messages (an 8-byte id, then framed
    /// records), acks them by id once Kafka has them, and nacks a bad one by id.
    #[tokio::test]
    async fn binary_messages_are_acknowledged_or_nacked_by_id() {
        use futures_util::{SinkExt, StreamExt};
        use sleet_avro::framed::push_framed;
        use tokio_tungstenite::tungstenite::Message;

        let topic = new_topic("ingest-avro-ws");
        let server = Server::start_with_schema(brokers(), &topic, &avsc_path(), &["--format", "avro"], None);
        let schema = RecordSchema::parse(sleet_avro::GATEWAY_SCHEMA).expect("the gateway schema");
        let message = |id: u64, ids: &[&str]| {
            let mut bytes = id.to_be_bytes().to_vec();
            for gateway in ids {
                let mut record = Vec::new();
                let values = [Value::String(gateway), Value::Long(1), Value::Double(2.0), Value::Double(3.0)];
                schema.encode_single_object(&values, &mut record).expect("a gateway record");
                push_framed(&record, &mut bytes);
            }
            bytes
        };
        let url = format!("ws://{}/v1/stream", server.address);
        let (mut socket, _) = tokio_tungstenite::connect_async(url).await.expect("connecting");
        socket.send(Message::Binary(message(7, &["gw-1", "gw-2"]).into())).await.expect("send");
        let mut truncated = message(8, &["gw-3"]);
        truncated.truncate(truncated.len() - 2);
        socket.send(Message::Binary(truncated.into())).await.expect("send");
        socket.send(Message::Text(r#"{"id": 9, "records": [{}]}"#.into())).await.expect("send");
        let (mut acks, mut nacks) = (Vec::new(), Vec::new());
        while acks.len() + nacks.len() < 3 {
            let answer = tokio::time::timeout(Duration::from_secs(30), socket.next()).await.expect("an answer in time");
            let Some(Ok(Message::Text(text))) = answer else { panic!("{answer:?}") };
            let answer: serde_json::Value = serde_json::from_str(text.as_str()).expect("JSON");
            acks.extend(answer["ack"].as_array().into_iter().flatten().map(|id| id.as_u64()));
            nacks.extend(answer["nack"].as_array().into_iter().flatten().cloned());
        }
        assert_eq!(acks, vec![Some(7)]);
        assert_eq!(nacks[0]["id"], 8, "{nacks:?}");
        assert!(nacks[0]["error"].as_str().expect("error").contains("record 0"), "{nacks:?}");
        assert!(nacks[1]["error"].as_str().expect("error").contains("binary"), "{nacks:?}");
        let written: usize = (0..PARTITIONS).map(|partition| read_partition(&topic, partition).len()).sum();
        assert_eq!(written, 2);
    }

    /// A server at its in-flight bound refuses with 503; the generator backs off and retries
    /// until every record is acknowledged, and Kafka holds each exactly once (admission
    /// refuses before anything is written).
    #[test]
    fn gen_gateway_retries_503_until_acknowledged() {
        let topic = fresh_topic("ingest-gateway-retry");
        let extra = ["--format", "avro", "--partitions", "2", "--records-in-flight-max", "150"];
        let server = Server::start_with_schema(brokers(), &topic, &avsc_path(), &extra, None);
        let mut gen = sleet();
        gen.args(["gen", "gateway", "--to", "http", "--address", &server.address, "--format", "avro"]);
        gen.args(["--partitions", "2", "--gateways", "30", "--count", "4000", "--batch", "70", "--in-flight", "4"]);
        gen.args(["--retries", "30"]);
        let output = common::run_with_limit(gen, Duration::from_secs(120));
        common::assert_success(&output, "sleet gen gateway --to http");
        let produced: Produced = serde_json::from_slice(&output.stdout).expect("the run's JSON on stdout");
        let stats = http(&server.address, "GET", "/v1/stats", None, b"").expect("GET /v1/stats");
        let stats: serde_json::Value = serde_json::from_str(&stats.body).expect("JSON");
        assert!(stats["requests_refused"].as_u64().expect("a count") > 0, "no request was refused: {stats}");
        let mut rows: Vec<Row> = (0..2)
            .flat_map(|partition| read_partition(&topic, partition))
            .map(|(_, value)| row(true, &value))
            .collect();
        assert_eq!(rows.len() as u64, produced.records);
        rows.sort();
        rows.dedup();
        assert_eq!(rows.len() as u64, produced.records, "no record twice");
    }

    /// With Kafka away, every attempt gets 503: the generator gives up after its retries,
    /// saying so, instead of hanging or counting anything as sent.
    #[test]
    fn gen_gateway_gives_up_after_its_retries() {
        let dir = test_dir("ingest-gateway-give-up");
        let extra = ["--ack-timeout", "300ms"];
        let server = Server::start_with_schema("127.0.0.1:1", "nowhere", &json_schema(&dir), &extra, None);
        let mut gen = sleet();
        gen.args(["gen", "gateway", "--to", "ws", "--address", &server.address, "--count", "200"]);
        gen.args(["--retries", "2"]);
        let output = common::run_with_limit(gen, Duration::from_secs(60));
        assert!(!output.status.success(), "the run must fail");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("gave up after 2 retries"), "{stderr}");
    }
}
