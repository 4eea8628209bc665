//! The flags that point a ysb job at events outside sleet: a Kafka topic or JSON-lines
//! files, and a campaigns table from a CSV file.

use anyhow::{bail, Result};
use sleet_plan::KafkaStart;

use crate::ysb_job::YsbInput;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputKind {
    /// The built-in generator (nothing outside sleet needed).
    Generator,
    /// A Kafka topic (`--brokers`, `--topic`).
    Kafka,
    /// JSON-lines files (`--input`).
    Files,
}

#[derive(Debug, Clone, clap::Args)]
pub struct InputFlags {
    /// Where the events come from.
    #[arg(long, value_enum, default_value = "generator")]
    pub source: InputKind,
    /// Kafka brokers, `host:port[,host:port…]` (with --source kafka).
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub brokers: String,
    /// Kafka topic (with --source kafka).
    #[arg(long, default_value = "ysb")]
    pub topic: String,
    /// Where a Kafka source starts: earliest, latest, or a timestamp in ms since the epoch.
    #[arg(long, default_value = "latest")]
    pub start: String,
    /// A JSON-lines file, or a directory of them, one partition per file (with --source files).
    #[arg(long)]
    pub input: Option<String>,
    /// At most this many records per source partition in one batch (Kafka and files).
    #[arg(long, default_value_t = sleet_plan::default_max_records_per_batch())]
    pub max_records_per_batch: u32,
    /// The ad → campaign table as a CSV file with the header `ad_id,campaign_id` (as
    /// `sleet gen ysb` writes it), instead of the one derived from --seed. Read by every
    /// worker: give a path they can all read.
    #[arg(long)]
    pub campaigns: Option<String>,
}

impl InputFlags {
    pub fn input(&self) -> Result<YsbInput> {
        Ok(match self.source {
            InputKind::Generator => YsbInput::Generator,
            InputKind::Kafka => YsbInput::Kafka {
                brokers: self.brokers.clone(),
                topic: self.topic.clone(),
                start: parse_start(&self.start)?,
                max_records_per_batch: self.max_records_per_batch,
            },
            InputKind::Files => {
                let Some(path) = &self.input else { bail!("--source files needs --input PATH") };
                YsbInput::Files { path: path.clone(), max_records_per_batch: self.max_records_per_batch }
            }
        })
    }

    /// The campaigns path made absolute, since workers may run in another directory.
    pub fn campaigns(&self) -> Result<Option<String>> {
        self.campaigns
            .as_ref()
            .map(|path| {
                let absolute = std::path::absolute(path)?;
                anyhow::ensure!(absolute.is_file(), "--campaigns {path}: no such file");
                Ok(absolute.display().to_string())
            })
            .transpose()
    }
}

pub fn parse_start(text: &str) -> Result<KafkaStart> {
    Ok(match text {
        "earliest" => KafkaStart::Earliest,
        "latest" => KafkaStart::Latest,
        ms => match ms.parse::<i64>() {
            Ok(ms) if ms >= 0 => KafkaStart::Timestamp(ms),
            _ => bail!("--start {ms}: expected earliest, latest or a timestamp in ms since the epoch"),
        },
    })
}
