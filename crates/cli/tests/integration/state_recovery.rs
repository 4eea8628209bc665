//! The home-gateway job end to end with real processes: cumulative counters (some wrapping at
//! 2^32, some readings arriving late) read from files, increments kept per gateway in the map
//! stage, totals and the top 3 per day in the reduce stage; a worker killed (SIGKILL) mid-run,
//! the job resumed on the survivors from its checkpoint (both stages' state restored), and
//! every day's final ranking equal to the ground truth computed here from scratch.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::recovery::{output_of, signal, sleep_until, submit_file, worker};
use common::{test_dir, Reaper};
use sleet_plan::*;
use sleet_workloads::gateway_job::{gateway_plan, GatewayJob, DAY_MS};

const MINUTE_MS: i64 = 60_000;
const GATEWAYS: u64 = 12;
const READINGS: i64 = 150;
const TOP: usize = 3;

fn mix(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value ^ (value >> 31)
}

/// One reading: gateway, time, cumulative tx and rx (mod 2^32).
type Reading = (String, i64, u64, u64);
/// A batch and the rows it ranked a day with, by rank: `(gateway, total)`.
type RankedInBatch = (u64, BTreeMap<i64, (String, u64)>);

/// Every gateway's readings, a minute apart (jittered by up to 20 s) across midnight, its
/// counters starting near 2^32 for every third gateway so they wrap.
fn readings() -> Vec<Reading> {
    let mut all = Vec::new();
    for gateway in 0..GATEWAYS {
        let (mut tx, mut rx) = (if gateway % 3 == 0 { (1u64 << 32) - 5_000 } else { gateway * 1_000 }, 0u64);
        for minute in 0..READINGS {
            let time =
                DAY_MS - 75 * MINUTE_MS + minute * MINUTE_MS + (mix(gateway << 16 | minute as u64) % 20_000) as i64;
            if minute > 0 {
                tx = (tx + mix(gateway * 7 + minute as u64) % 10_000 * (gateway + 1)) % (1 << 32);
                rx = (rx + mix(gateway * 13 + minute as u64) % 3_000) % (1 << 32);
            }
            all.push((format!("gw-{gateway:02}"), time, tx, rx));
        }
    }
    all
}

/// The files, one per source partition: a gateway's readings all in one (as a topic keyed
/// by gateway would hold them), in time order but for one reading in 50, which arrives after
/// its gateway's next one (late by about a minute, inside the job's 2-minute lateness).
fn write_inputs(dir: &Path, readings: &[Reading]) {
    std::fs::create_dir_all(dir).expect("input dir");
    for partition in 0..2u64 {
        let mut mine: Vec<&Reading> = readings
            .iter()
            .filter(|reading| reading.0[3..].parse::<u64>().expect("numbered") % 2 == partition)
            .collect();
        mine.sort_by_key(|reading| (reading.1, reading.0.clone()));
        let mut order: Vec<&Reading> = Vec::with_capacity(mine.len());
        let mut held: BTreeMap<&str, &Reading> = BTreeMap::new();
        for reading in mine {
            if let Some(late) = held.remove(reading.0.as_str()) {
                order.push(reading);
                order.push(late);
            } else if mix(reading.1 as u64).is_multiple_of(50) {
                held.insert(reading.0.as_str(), reading);
            } else {
                order.push(reading);
            }
        }
        order.extend(held.into_values());
        let text: String = order
            .iter()
            .map(|(id, time, tx, rx)| {
                format!("{{\"gateway_id\":\"{id}\",\"date\":{time},\"ipTx\":{tx},\"ipRx\":{rx}}}\n")
            })
            .collect();
        std::fs::write(dir.join(format!("part-{partition}.jsonl")), text).expect("input file");
    }
}

/// The ground truth: each gateway's readings sorted by time, increments from scratch, summed
/// per (day, gateway), ranked per day (largest first, ties to the smaller id).
fn expected_rankings(readings: &[Reading]) -> BTreeMap<i64, Vec<(String, u64)>> {
    let mut by_gateway: BTreeMap<&str, Vec<&Reading>> = BTreeMap::new();
    for reading in readings {
        by_gateway.entry(&reading.0).or_default().push(reading);
    }
    let mut totals: BTreeMap<i64, BTreeMap<String, u64>> = BTreeMap::new();
    for (id, mut series) in by_gateway {
        series.sort_by_key(|reading| reading.1);
        for pair in series.windows(2) {
            let added =
                (pair[1].2 + (1 << 32) - pair[0].2) % (1 << 32) + (pair[1].3 + (1 << 32) - pair[0].3) % (1 << 32);
            *totals.entry(pair[1].1 / DAY_MS).or_default().entry(id.to_string()).or_default() += added;
        }
    }
    totals
        .into_iter()
        .map(|(day, members)| {
            let mut ranked: Vec<(String, u64)> = members.into_iter().collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            ranked.truncate(TOP);
            (day, ranked)
        })
        .collect()
}

fn job_file(dir: &Path, start_ms: i64) -> std::path::PathBuf {
    let source = SourceSpec::Files(FileSourceSpec {
        path: dir.join("input").display().to_string(),
        max_records_per_partition_per_batch: 30,
        partitions: 2,
        start_bytes: Vec::new(),
    });
    let job = GatewayJob {
        encoding: ReadingEncoding::Cumulative,
        format: GatewayFormat::Json,
        allowed_lateness_ms: 2 * MINUTE_MS,
        ttl_ms: 2 * DAY_MS,
        top: TOP as u32,
        max_keys: 1_000,
        reduce_partitions: 2,
    };
    let sink = SinkSpec::JsonLines { dir: dir.join("results").display().to_string() };
    let plan = gateway_plan(source, &job, sink).expect("a valid plan");
    let job = JobFile {
        plan,
        settings: JobSettings {
            batch_interval_ms: 100,
            duration_ms: Some(9_000),
            start_ms: Some(start_ms),
            checkpoint_interval_ms: 500,
            ..JobSettings::default()
        },
        query: None,
    };
    let path = dir.join("job.json");
    std::fs::write(&path, job.to_json()).expect("job file");
    path
}

/// Each day's ranking as the job left it: the rows of the last batch that ranked the day.
fn final_rankings(dir: &Path) -> BTreeMap<i64, Vec<(String, u64)>> {
    let lines = sleet_durable::committed::read_json_lines(&dir.join("results"), "part-", "sink").expect("sink files");
    let mut latest: BTreeMap<i64, RankedInBatch> = BTreeMap::new();
    for line in lines {
        let value = &line.value;
        let day = value["day"].as_i64().expect("day");
        let batch = value["batch"].as_u64().expect("batch");
        let rank = value["rank"].as_i64().expect("rank");
        let row =
            (value["gateway_id"].as_str().expect("id").to_string(), value["total"].as_f64().expect("total") as u64);
        let entry = latest.entry(day).or_insert((batch, BTreeMap::new()));
        if batch > entry.0 {
            *entry = (batch, BTreeMap::new());
        }
        if batch == entry.0 {
            entry.1.insert(rank, row);
        }
    }
    latest.into_iter().map(|(day, (_, ranks))| (day, ranks.into_values().collect())).collect()
}

#[test]
fn a_killed_worker_leaves_the_gateway_top_k_exact() {
    let dir = test_dir("state_recovery_kill");
    let readings = readings();
    write_inputs(&dir.join("input"), &readings);
    let start_ms = (sleet_wire::clock::now_ms() + 3_000) / 100 * 100;
    let job = job_file(&dir, start_ms);

    let log = std::fs::File::create(dir.join("driver.log")).expect("driver log");
    let checkpoints = dir.join("checkpoints").display().to_string();
    let extra = ["--expect-workers", "3", "--checkpoint-dir", checkpoints.as_str()];
    let (driver, address) = common::start_driver_logged("127.0.0.1:0", &extra, log);
    let mut processes = Reaper(vec![driver]);
    for index in 1..=3 {
        processes.0.push(worker(&dir, &address, index));
    }
    let submit = submit_file(&job, &address);
    // The files hold 75 batches of input (30 readings per partition per batch).
    sleep_until(start_ms + 3_500);
    signal(&processes.0[2], libc::SIGKILL);
    let (succeeded, stdout, stderr) = output_of(submit, Duration::from_secs(90));
    assert!(succeeded, "the job survives a lost worker:\n{stdout}\n{stderr}");
    assert!(stdout.contains("recovered from losing worker"), "the summary tells of the recovery: {stdout}");
    assert!(stdout.contains("from the checkpoint after batch"), "it resumed from a checkpoint: {stdout}");

    let expected = expected_rankings(&readings);
    assert_eq!(expected.len(), 2, "the readings span two days");
    assert_eq!(final_rankings(&dir), expected);
}
