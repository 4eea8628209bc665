//! The ingest server alone, as `sleet ingest` runs it (same flags), in a small binary: for
//! measuring the server in a release build without building the whole engine.
//!
//! ```text
//! cargo run --release -p sleet-ingest --example ingest_serve -- --brokers … --topic … \
//!     --schema crates/ingest/examples/gateway_schema.json --key gateway_id
//! ```

use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: sleet_ingest::IngestArgs,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let report =
        sleet_ingest::serve(cli.args, |address| println!("{address}"), sleet_ingest::shutdown_signal()).await?;
    println!("{}", serde_json::json!({ "stats": report }));
    Ok(())
}
