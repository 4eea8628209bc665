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
use crate::plot_bars::{render_bars_svg, BarPanel};

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
    let points = match kind {
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
            points
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
            points
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
            points
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
            points
        }
    };
    if let Some(path) = plot {
        write_output(path, &(plot_of(kind, base, &points) + "\n"))?;
    }
    let json = json!({
        "benchmark": "gateway",
        "engine": "sleet",
        "version": env!("CARGO_PKG_VERSION"),
        "sweep": kind.name(),
        "stability_definition": "stable: the batch's map plus reduce time at p95 below the interval, and the median delay from a batch's end to its visible results in the run's last quarter within one interval of the second quarter's (the first 10 % of batches left out)",
        "exact": exact,
        "points": points,
        "runs": runs,
    });
    Ok((json, exact))
}

/// The sweep's plot (SVG) over its points, as `run` wrote them in the result's `points`.
pub fn plot_of(kind: SweepKind, base: &RunConfig, points: &[Value]) -> String {
    match kind {
        SweepKind::Encodings => render_bars_svg(&encodings_title(base), &encodings_panels(points)),
        SweepKind::Transports => render_bars_svg(&transports_title(base), &transports_panels(points)),
        SweepKind::Partitions => render_svg(&partitions_plot(base, points)),
        SweepKind::Interval => render_svg(&interval_plot(base, points)),
    }
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

/// Like the study's figure: batch processing time against the interval, a line per partition
/// count, beside the line where processing takes the whole interval (stable below it).
fn interval_plot(base: &RunConfig, points: &[Value]) -> LinePlot {
    let mut series: Vec<Series> = points
        .iter()
        .filter_map(|point| {
            let tried = point["tried"].as_array()?;
            let mut line: Vec<(f64, f64)> = tried
                .iter()
                .filter_map(|run| Some((run["batch_interval_ms"].as_f64()?, run["processing_ms"]["p50"].as_f64()?)))
                .collect();
            line.sort_by(|a, b| a.0.total_cmp(&b.0));
            let partitions = point["partitions"].as_u64()?;
            let label = format!("{partitions} partition{}, processing p50", if partitions == 1 { "" } else { "s" });
            Some(Series { label, points: line })
        })
        .collect();
    let intervals: Vec<f64> = series.iter().flat_map(|line| line.points.iter().map(|(x, _)| *x)).collect();
    let (low, high) =
        intervals.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(low, high), x| (low.min(*x), high.max(*x)));
    if low <= high {
        series.push(Series {
            label: "processing = interval (stable below)".into(),
            points: vec![(low, low), (high, high)],
        });
    }
    LinePlot {
        title: format!(
            "sleet-bench gateway: batch processing against the interval at {} records/s ({} {})",
            base.rate,
            base.format.as_str(),
            base.feed.as_str()
        ),
        x_label: "batch interval (ms)".into(),
        y_label: "batch processing p50 (ms)".into(),
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        series,
    }
}

/// `points[..][category_field] == category` and `points[..]["format"] == format`: the run of
/// one category in one format, if the sweep made it.
fn point_of<'a>(points: &'a [Value], category_field: &str, category: &str, format: &str) -> Option<&'a Value> {
    points.iter().find(|point| point[category_field] == category && point["format"] == format)
}

/// A panel's series, one per format: `figure` of that format's run in each category.
fn format_series(
    points: &[Value],
    category_field: &str,
    categories: &[&str],
    figure: impl Fn(&Value) -> Option<f64>,
    label_suffix: &str,
) -> Vec<(String, Vec<Option<f64>>)> {
    [GatewayFormat::Json, GatewayFormat::Avro]
        .iter()
        .map(|format| {
            let values = categories
                .iter()
                .map(|category| point_of(points, category_field, category, format.as_str()).and_then(&figure))
                .collect();
            let name = match format {
                GatewayFormat::Json => "JSON",
                GatewayFormat::Avro => "Avro",
            };
            (format!("{name}{label_suffix}"), values)
        })
        .collect()
}

fn encodings_title(base: &RunConfig) -> String {
    format!("sleet-bench gateway: encodings × formats at {} records/s ({} feed)", base.rate, base.feed.as_str())
}

fn encodings_panels(points: &[Value]) -> Vec<BarPanel> {
    let encodings: Vec<&str> = GatewayEncoding::ALL.iter().map(|encoding| encoding.as_str()).collect();
    let groups: Vec<String> = encodings.iter().map(|name| name.to_string()).collect();
    vec![
        BarPanel {
            title: "batch processing p50".into(),
            y_label: "ms".into(),
            groups: groups.clone(),
            series: format_series(points, "encoding", &encodings, |point| point["processing_ms"]["p50"].as_f64(), ""),
        },
        BarPanel {
            title: "sleet CPU per record".into(),
            y_label: "µs".into(),
            groups,
            series: format_series(
                points,
                "encoding",
                &encodings,
                |point| point["cpu_us_per_record"]["sleet"].as_f64(),
                "",
            ),
        },
    ]
}

fn transports_title(base: &RunConfig) -> String {
    format!("sleet-bench gateway: HTTP and WebSocket at {} records/s", base.rate)
}

fn transports_panels(points: &[Value]) -> Vec<BarPanel> {
    let feeds = [Feed::Http.as_str(), Feed::Ws.as_str()];
    let groups = vec!["HTTP".to_string(), "WebSocket".to_string()];
    let mut latency = format_series(points, "feed", &feeds, |point| point["ack_latency_ms_p50"].as_f64(), " p50");
    latency.extend(format_series(points, "feed", &feeds, |point| point["ack_latency_ms_p99"].as_f64(), " p99"));
    vec![
        BarPanel {
            title: "ingest server CPU per record".into(),
            y_label: "µs".into(),
            groups: groups.clone(),
            series: format_series(points, "feed", &feeds, |point| point["cpu_us_per_record"]["ingest"].as_f64(), ""),
        },
        BarPanel { title: "acknowledgement latency".into(), y_label: "ms".into(), groups, series: latency },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_plot_has_a_line_per_partition_count_and_the_stable_line_across_all_intervals() {
        let tried = |pairs: &[(u64, f64)]| -> Vec<Value> {
            pairs
                .iter()
                .map(|(interval, p50)| json!({"batch_interval_ms": interval, "processing_ms": {"p50": p50}}))
                .collect()
        };
        let points = vec![
            json!({"partitions": 1, "tried": tried(&[(500, 73.4), (200, 39.8), (10, 3.4)])}),
            json!({"partitions": 2, "tried": tried(&[(500, 47.0), (20, 5.0)])}),
        ];
        let base = RunConfig {
            feed: Feed::Kafka,
            brokers: String::new(),
            format: GatewayFormat::Json,
            encoding: GatewayEncoding::Cumulative,
            partitions: 1,
            workers: 1,
            cores_per_worker: 2,
            rate: 100_000,
            gateways: 10_000,
            duration: std::time::Duration::from_secs(30),
            batch_interval_ms: 100,
            checkpoint_interval_ms: 1000,
            seed: 1,
            kill: None,
            request_records: 500,
            in_flight: 4,
        };
        let plot = interval_plot(&base, &points);
        assert_eq!(plot.series.len(), 3);
        assert_eq!(plot.series[0].points, [(10.0, 3.4), (200.0, 39.8), (500.0, 73.4)], "sorted by interval");
        assert_eq!(plot.series[2].points, [(10.0, 10.0), (500.0, 500.0)]);
    }

    #[test]
    fn a_transports_panel_reads_each_feed_and_format_from_its_own_run() {
        let points = vec![
            json!({"feed": "http", "format": "json", "ack_latency_ms_p50": 6.0, "ack_latency_ms_p99": 9.5, "cpu_us_per_record": {"ingest": 1.47}}),
            json!({"feed": "ws", "format": "avro", "ack_latency_ms_p50": 5.0, "ack_latency_ms_p99": 8.0, "cpu_us_per_record": {"ingest": 1.21}}),
        ];
        let panels = transports_panels(&points);
        assert_eq!(panels[0].groups, ["HTTP", "WebSocket"]);
        assert_eq!(panels[0].series[0], ("JSON".to_string(), vec![Some(1.47), None]));
        assert_eq!(panels[0].series[1], ("Avro".to_string(), vec![None, Some(1.21)]));
        let labels: Vec<&str> = panels[1].series.iter().map(|(label, _)| label.as_str()).collect();
        assert_eq!(labels, ["JSON p50", "Avro p50", "JSON p99", "Avro p99"]);
        assert_eq!(panels[1].series[3].1, vec![None, Some(8.0)]);
    }
}
