//! `sleet ingest`: runs the ingest server until SIGTERM or SIGINT, printing its address as
//! the first line on stdout (for scripts and tests that start it on port 0) and its final
//! figures as one JSON line when it exits.

use std::time::Duration;

use anyhow::{Context, Result};
use sleet_ingest::IngestArgs;

/// How long the process waits for the server after Ctrl-C: its own shutdown bound, plus a
/// little to print the figures.
pub fn grace(args: &IngestArgs) -> Duration {
    args.shutdown_timeout + Duration::from_secs(2)
}

pub async fn run(args: IngestArgs) -> Result<()> {
    let topic = args.topic.clone();
    let report = sleet_ingest::serve(
        args,
        |address| {
            println!("{address}");
            eprintln!("sleet ingest: serving on http://{address} into Kafka topic `{topic}`");
        },
        sleet_ingest::shutdown_signal(),
    )
    .await
    .context("sleet ingest")?;
    println!("{}", serde_json::json!({ "stats": report }));
    Ok(())
}
