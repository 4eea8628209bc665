//! The field study's experiments as sweeps of gateway runs: encodings × formats at one rate,
//! HTTP against WebSocket in both formats, 1–4 partitions at one rate, and per partition count
//! the smallest stable batch interval.
//! Every run is judged against the ground truth; a sweep is exact when all of its runs are.

use std::path::Path;

use anyhow::Result;
use serde_json::{json, Value};
use sleet_plan::{GatewayEncoding, GatewayFormat};

use super::run::{run_once, RunConfig, RunResult};
use super::{Feed, SweepKind};
use crate::output::write_output;
use crate::plot::{render_svg, LinePlot, Scale, Series};

const PARTITIONS: [u32; 4] = [1, 2, 3, 4];
/// Batch intervals tried from the longest down; the search stops at the first unstable one.
const INTERVALS_MS: [u64; 6] = [500, 200, 100, 50, 20, 10];

pub async fn run(kind: SweepKind, base: &RunConfig, run_dir: &Path, plot: Option<&Path>) -> Result<(Value, bool)> {
    let mut runs: Vec<Value> = Vec::new();
    let mut exact = true;
    let mut record = |result: &RunResult, runs: &mut Vec<Value>| {
        exact &= result.exact();
        runs.push(result.json.clone());
    };
    let (points, svg) = match kind {
        SweepKind::Encodings => {
            let mut points = Vec::new();
            for format in [GatewayFormat::Json, GatewayFormat::Avro] {
                for encoding in GatewayEncoding::ALL {
                    let config = RunConfig { format, encoding, ..base.clone() };
                    let result = run_once(&config, run_dir).await?;
                    record(&result, &mut runs);
                    points.push(json!({
                        "format": format.as_str(),
                        "encoding": encoding.as_str(),
                        "exact": result.exact(),
                        "processing_ms": result.figures.processing_ms,
                        "delay_ms": result.figures.delay_ms,
                        "cpu_us_per_record": result.json["cpu_us_per_record"],
                    }));
                }
            }
            (points, None)
        }
        SweepKind::Transports => {
            let mut points = Vec::new();
            for feed in [Feed::Http, Feed::Ws] {
                for format in [GatewayFormat::Json, GatewayFormat::Avro] {
                    let config = RunConfig { feed, format, ..base.clone() };
                    let result = run_once(&config, run_dir).await?;
                    record(&result, &mut runs);
                    let stats = &result.json["ingest"]["stats_of_last_server"];
                    points.push(json!({
                        "feed": feed.as_str(),
                        "format": format.as_str(),
                        "exact": result.exact(),
                        "records_per_s": result.records_per_s,
                        "producer_records_per_s": result.json["producer_records_per_s"],
                        "ack_latency_ms_p50": stats["ack_latency_ms_p50"],
                        "ack_latency_ms_p99": stats["ack_latency_ms_p99"],
                        "cpu_us_per_record": result.json["cpu_us_per_record"],
                        "delay_ms": result.figures.delay_ms,
                    }));
                }
            }
            (points, None)
        }
        SweepKind::Partitions => {
            let mut points = Vec::new();
            for partitions in PARTITIONS {
                let config = RunConfig { partitions, ..base.clone() };
                let result = run_once(&config, run_dir).await?;
                record(&result, &mut runs);
                points.push(json!({
                    "partitions": partitions,
                    "exact": result.exact(),
                    "records_per_s": result.records_per_s,
                    "processing_ms": result.figures.processing_ms,
                    "delay_ms": result.figures.delay_ms,
                    "stable": result.figures.stable,
                    "cpu_us_per_record": result.json["cpu_us_per_record"],
                }));
            }
            let svg = render_svg(&partitions_plot(base, &points));
            (points, Some(svg))
        }
        SweepKind::Interval => {
            let mut points = Vec::new();
            for partitions in PARTITIONS {
                let mut smallest_stable = None;
                let mut tried = Vec::new();
                for interval in INTERVALS_MS {
                    let config = RunConfig { partitions, batch_interval_ms: interval, ..base.clone() };
                    let result = run_once(&config, run_dir).await?;
                    record(&result, &mut runs);
                    tried.push(json!({
                        "batch_interval_ms": interval,
                        "stable": result.figures.stable,
                        "unstable_because": result.figures.unstable_because,
                        "exact": result.exact(),
                        "processing_ms": result.figures.processing_ms,
                        "delay_ms": result.figures.delay_ms,
                    }));
                    if !result.figures.stable {
                        break;
                    }
                    smallest_stable = Some(interval);
                }
                eprintln!(
                    "  {partitions} partitions: smallest stable interval {}",
                    smallest_stable.map_or("none tried".to_string(), |ms| format!("{ms} ms"))
                );
                points.push(
                    json!({ "partitions": partitions, "smallest_stable_interval_ms": smallest_stable, "tried": tried }),
                );
            }
            let svg = render_svg(&interval_plot(base, &points));
            (points, Some(svg))
        }
    };
    if let (Some(path), Some(svg)) = (plot, svg) {
        write_output(path, &(svg + "\n"))?;
    }
    let json = json!({
        "benchmark": "gateway",
        "engine": "sleet",
        "version": env!("CARGO_PKG_VERSION"),
        "sweep": format!("{kind:?}").to_lowercase(),
        "stability_definition": "stable: the batch's map plus reduce time at p95 below the interval, and the median delay from a batch's end to its visible results in the run's last quarter within one interval of the second quarter's (the first 10 % of batches left out)",
        "exact": exact,
        "points": points,
        "runs": runs,
    });
    Ok((json, exact))
}

fn partitions_plot(base: &RunConfig, points: &[Value]) -> LinePlot {
    let series_of = |label: &str, field: &str, at: &str| Series {
        label: label.to_string(),
        points: points
            .iter()
            .filter_map(|point| Some((point["partitions"].as_f64()?, point[field][at].as_f64()?)))
            .collect(),
    };
    LinePlot {
        title: format!(
            "sleet-bench gateway: {} records/s ({} {}, {} feed), {} ms batches",
            base.rate,
            base.format.as_str(),
            base.encoding.as_str(),
            base.feed.as_str(),
            base.batch_interval_ms
        ),
        x_label: "partitions (source and reduce)".into(),
        y_label: "ms".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        series: vec![
            series_of("batch processing p50", "processing_ms", "p50"),
            series_of("batch processing p99", "processing_ms", "p99"),
            series_of("results delay p50", "delay_ms", "p50"),
            series_of("results delay p99", "delay_ms", "p99"),
        ],
    }
}

fn interval_plot(base: &RunConfig, points: &[Value]) -> LinePlot {
    LinePlot {
        title: format!(
            "sleet-bench gateway: smallest stable batch interval at {} records/s ({} {})",
            base.rate,
            base.format.as_str(),
            base.feed.as_str()
        ),
        x_label: "partitions (source and reduce)".into(),
        y_label: "smallest stable batch interval (ms)".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Log,
        series: vec![Series {
            label: "smallest stable interval".into(),
            points: points
                .iter()
                .filter_map(|point| {
                    Some((point["partitions"].as_f64()?, point["smallest_stable_interval_ms"].as_f64()?))
                })
                .collect(),
        }],
    }
}
