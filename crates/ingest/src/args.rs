//! The flags of `sleet ingest`, each limit with its default.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// JSON objects, one per body or an array (`--schema` is a plan schema).
    Json,
    /// Single-object Avro records, length-prefixed (`--schema` is an `.avsc`).
    Avro,
}

#[derive(Debug, Clone, clap::Args)]
pub struct IngestArgs {
    /// Address to serve HTTP and WebSocket on; port 0 picks a free port. The bound address is
    /// printed as the first line on stdout.
    #[arg(long, default_value = "127.0.0.1:8480")]
    pub listen: String,
    /// Kafka brokers, `HOST:PORT[,HOST:PORT…]`.
    #[arg(long)]
    pub brokers: String,
    #[arg(long)]
    pub topic: String,
    /// Create the topic with this many partitions if it does not exist (otherwise it must).
    #[arg(long)]
    pub partitions: Option<u32>,
    /// The records' schema: with `--format json` the JSON a job file's `decode_json` takes,
    /// `{"fields": [...]}`; with `--format avro` an Avro record schema (`.avsc`), as
    /// `decode_avro` takes it.
    #[arg(long)]
    pub schema: PathBuf,
    /// The field whose string is each record's Kafka key; declared utf8 (JSON) or string
    /// (Avro) in the schema.
    #[arg(long)]
    pub key: String,
    #[arg(long, value_enum, default_value = "json")]
    pub format: FormatArg,
    /// A file holding the bearer token clients must send (trailing whitespace ignored);
    /// without it the token comes from SLEET_INGEST_TOKEN, and without that none is needed.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Largest request body (HTTP) or message (WebSocket); larger ones get 413.
    #[arg(long, default_value_t = 4 << 20)]
    pub body_bytes_max: usize,
    /// Largest record, as the job's `decode_json` `max_record_bytes` (its default is 16 KiB):
    /// use the job's value, so that what is accepted here decodes there.
    #[arg(long, default_value_t = 16 * 1024)]
    pub record_bytes_max: u32,
    /// Records accepted but not yet acknowledged by Kafka, over all clients; beyond it
    /// requests get 503.
    #[arg(long, default_value_t = 200_000)]
    pub records_in_flight_max: u32,
    /// Bytes of such records.
    #[arg(long, default_value_t = 128 << 20)]
    pub bytes_in_flight_max: u32,
    /// Open connections; further ones wait to be accepted.
    #[arg(long, default_value_t = 1024)]
    pub connections_max: usize,
    /// A connection that sends and receives nothing for this long is closed (within twice
    /// this long) and its slot given back; a WebSocket client keeps a quiet connection open by
    /// sending pings.
    #[arg(long, value_parser = duration, default_value = "120s")]
    pub idle_timeout: Duration,
    /// How long a request waits for Kafka's acknowledgement before it is refused with 503.
    #[arg(long, value_parser = duration, default_value = "10s")]
    pub ack_timeout: Duration,
    /// How long the writer gathers records from concurrent requests into one batch.
    #[arg(long, value_parser = duration, default_value = "5ms")]
    pub linger: Duration,
    /// On SIGTERM or SIGINT, how long to finish what is in flight before exiting anyway.
    #[arg(long, value_parser = duration, default_value = "30s")]
    pub shutdown_timeout: Duration,
    /// WebSocket messages of one connection awaiting Kafka; while at it, the server stops
    /// reading that connection.
    #[arg(long, default_value_t = 1024)]
    pub ws_pending_max: usize,
    /// Acknowledgement messages queued for one WebSocket client that is not reading them;
    /// beyond it the server closes the connection.
    #[arg(long, default_value_t = 256)]
    pub ws_outgoing_max: usize,
}

/// `10s`, `250ms`, `2m`, or a bare number of seconds.
pub fn duration(text: &str) -> Result<Duration, String> {
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| format!("`{text}` is not a duration such as 10s or 250ms"))?;
    let seconds = match unit {
        "" | "s" => number,
        "ms" => number / 1000.0,
        "m" => number * 60.0,
        _ => return Err(format!("`{text}`: the unit must be ms, s or m")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|error| format!("`{text}`: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(duration("10h").is_err());
        assert!(duration("s").is_err());
        assert!(duration("").is_err());
    }
}
