//! A load client for `sleet ingest`: several connections each post batches of gateway-like
//! records (HTTP) or send them as WebSocket messages, for a fixed time, then print records
//! acknowledged per second of wall time, acknowledgement latency p50/p99 as the client saw
//! it, and the server's CPU time per record (from its `/v1/stats`, before and after).
//!
//! ```text
//! cargo run --release -p sleet-ingest --example ingest_load -- \
//!     --address 127.0.0.1:8480 --transport http|ws [--connections 4] [--batch 500] \
//!     [--window 2] [--seconds 10]
//! ```
//! The records match `examples/gateway_schema.json` (key `gateway_id`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

struct Options {
    address: String,
    websocket: bool,
    connections: usize,
    batch: usize,
    /// WebSocket messages a connection keeps unacknowledged.
    window: usize,
    duration: Duration,
}

fn options() -> Result<Options> {
    let mut options = Options {
        address: "127.0.0.1:8480".to_string(),
        websocket: false,
        connections: 4,
        batch: 500,
        window: 2,
        duration: Duration::from_secs(10),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let [flag, value] = pair else { bail!("flags take a value: {pair:?}") };
        match flag.as_str() {
            "--address" => options.address = value.clone(),
            "--transport" => options.websocket = value == "ws",
            "--connections" => options.connections = value.parse()?,
            "--batch" => options.batch = value.parse()?,
            "--window" => options.window = value.parse()?,
            "--seconds" => options.duration = Duration::from_secs_f64(value.parse()?),
            other => bail!("unknown flag {other}"),
        }
    }
    Ok(options)
}

/// Record `n` of connection `connection`: 10 000 gateways, counters growing with `n`.
fn record(connection: usize, n: u64) -> String {
    let gateway = (n.wrapping_mul(2_654_435_761) + connection as u64) % 10_000;
    format!(
        r#"{{"gateway_id":"gw-{gateway:05}","ts":{},"bytes_in":{},"bytes_out":{}}}"#,
        1_700_000_000_000u64 + n,
        n * 1500,
        n * 300
    )
}

fn batch(connection: usize, first: u64, count: usize) -> String {
    let records: Vec<String> = (0..count as u64).map(|index| record(connection, first + index)).collect();
    format!("[{}]", records.join(","))
}

/// A minimal HTTP/1.1 keep-alive exchange: the status and body of one request.
async fn exchange(
    stream: &mut BufReader<TcpStream>,
    address: &str,
    method: &str,
    path: &str,
    body: &str,
) -> Result<(u16, String)> {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.get_mut().write_all(head.as_bytes()).await?;
    stream.get_mut().write_all(body.as_bytes()).await?;
    let mut line = String::new();
    stream.read_line(&mut line).await?;
    let status: u16 = line.split(' ').nth(1).context("a status line")?.parse()?;
    let mut length = 0usize;
    loop {
        line.clear();
        stream.read_line(&mut line).await?;
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse()?;
            }
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

async fn server_stats(address: &str) -> Result<serde_json::Value> {
    let mut stream = BufReader::new(TcpStream::connect(address).await?);
    let (_, body) = exchange(&mut stream, address, "GET", "/v1/stats", "").await?;
    Ok(serde_json::from_str(&body)?)
}

/// Records acknowledged and each acknowledgement's latency.
type Outcome = (u64, Vec<Duration>);

async fn http_connection(options: &Options, connection: usize, until: Instant) -> Result<Outcome> {
    let mut stream = BufReader::new(TcpStream::connect(&options.address).await?);
    stream.get_mut().set_nodelay(true)?;
    let (mut records, mut latencies, mut next) = (0, Vec::new(), 0u64);
    while Instant::now() < until {
        let body = batch(connection, next, options.batch);
        next += options.batch as u64;
        let sent = Instant::now();
        let (status, reply) = exchange(&mut stream, &options.address, "POST", "/v1/records", &body).await?;
        if status != 200 {
            bail!("status {status}: {reply}");
        }
        latencies.push(sent.elapsed());
        records += options.batch as u64;
    }
    Ok((records, latencies))
}

async fn ws_connection(options: &Options, connection: usize, until: Instant) -> Result<Outcome> {
    let url = format!("ws://{}/v1/stream", options.address);
    let (socket, _) = tokio_tungstenite::connect_async(url).await?;
    let (mut sink, mut stream) = socket.split();
    let (mut records, mut latencies, mut next_id) = (0, Vec::new(), 0u64);
    let mut sent_at: HashMap<u64, Instant> = HashMap::new();
    loop {
        while sent_at.len() < options.window && Instant::now() < until {
            let body = batch(connection, next_id * options.batch as u64, options.batch);
            sink.send(Message::Text(format!(r#"{{"id":{next_id},"records":{body}}}"#).into())).await?;
            sent_at.insert(next_id, Instant::now());
            next_id += 1;
        }
        if sent_at.is_empty() {
            return Ok((records, latencies));
        }
        let answer = stream.next().await.context("the server closed the connection")??;
        let answer: serde_json::Value = serde_json::from_str(answer.to_text()?)?;
        if let Some(nack) = answer.get("nack") {
            bail!("refused: {nack}");
        }
        for id in answer["ack"].as_array().into_iter().flatten() {
            let sent = sent_at.remove(&id.as_u64().context("an id")?).context("an id sent")?;
            latencies.push(sent.elapsed());
            records += options.batch as u64;
        }
    }
}

fn percentile_ms(sorted: &[Duration], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).map_or(0.0, |latency| latency.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() -> Result<()> {
    let options = options()?;
    let before = server_stats(&options.address).await?;
    let started = Instant::now();
    let until = started + options.duration;
    let runs = (0..options.connections).map(|connection| {
        let options = &options;
        async move {
            if options.websocket {
                ws_connection(options, connection, until).await
            } else {
                http_connection(options, connection, until).await
            }
        }
    });
    let outcomes = futures_util::future::join_all(runs).await;
    let wall = started.elapsed();
    let after = server_stats(&options.address).await?;
    let (mut records, mut latencies) = (0u64, Vec::new());
    for outcome in outcomes {
        let (count, mut measured) = outcome?;
        records += count;
        latencies.append(&mut measured);
    }
    latencies.sort_unstable();
    let delta = |name: &str| after[name].as_f64().unwrap_or(0.0) - before[name].as_f64().unwrap_or(0.0);
    let server_records = delta("records_accepted");
    let report = serde_json::json!({
        "transport": if options.websocket { "ws" } else { "http" },
        "connections": options.connections,
        "batch": options.batch,
        "wall_s": wall.as_secs_f64(),
        "records": records,
        "records_per_s": records as f64 / wall.as_secs_f64(),
        "acks": latencies.len(),
        "ack_latency_ms_p50": percentile_ms(&latencies, 0.50),
        "ack_latency_ms_p99": percentile_ms(&latencies, 0.99),
        "server_cpu_s": delta("cpu_s"),
        "server_cpu_us_per_record": if server_records > 0.0 { delta("cpu_s") * 1e6 / server_records } else { 0.0 },
    });
    println!("{report}");
    Ok(())
}
