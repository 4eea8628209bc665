//! SQL scripts through the `sleet` binary: `sleet sql` prints the job a script describes (the
//! ysb script exactly the job `sleet job ysb` prints), and `sleet submit` runs scripts whose
//! results are checked against the generators' ground truth, as the builder's jobs are.

use crate::common;
use crate::gateway_job::{assert_matches_the_truth, gateway_spec, run_file, start_ms, GATEWAYS};

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::recovery::{assert_exact, Job, RATE, SEED};
use common::{run_with_limit, sleet, test_dir};
use sleet_plan::{GatewayEncoding, JobFile};

fn repository_path(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// `sleet ARGS` run in `dir`, which must succeed; its standard output.
fn sleet_in(dir: &Path, args: &[&str]) -> String {
    let mut command = sleet();
    command.current_dir(dir).args(args);
    let output = run_with_limit(command, Duration::from_secs(30));
    common::assert_success(&output, &args.join(" "));
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[test]
fn the_ysb_script_plans_exactly_the_job_sleet_job_ysb_prints() {
    let dir = test_dir("sql_ysb_plan");
    let script = repository_path("examples/ysb.sql");
    let from_sql = JobFile::from_json(&sleet_in(&dir, &["sql", script.to_str().expect("UTF-8 path")])).expect("a job");
    let from_builder = JobFile::from_json(&sleet_in(&dir, &["job", "ysb"])).expect("a job");
    assert_eq!(from_sql.plan.nodes, from_builder.plan.nodes, "the same nodes, so the same results and cost");
    assert_eq!(from_sql.settings.batch_interval_ms, from_builder.settings.batch_interval_ms);
    assert_eq!(from_sql.settings.dead_letter_dir, from_builder.settings.dead_letter_dir);
    let explained = sleet_in(&dir, &["sql", "--explain", script.to_str().expect("UTF-8 path")]);
    assert!(explained.contains("partial aggregation map-side: yes"), "{explained}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A driver and two workers run `script`; its summary.
fn submit_script(dir: &Path, script: &Path) -> String {
    run_file(dir, script, 2, None)
}

#[test]
fn the_ysb_query_in_sql_counts_every_window_as_the_ground_truth_does() {
    let dir = test_dir("sql_ysb_exact");
    let start_ms = (sleet_wire::clock::now_ms() + 3_000) / 100 * 100;
    let results = dir.join("results");
    let script = format!(
        "SET 'batch.interval' = '100ms';
         SET 'duration' = '3s';
         SET 'start.ms' = '{start_ms}';
         SET 'checkpoint.interval' = '500ms';
         CREATE TABLE events (user_id VARCHAR NOT NULL, page_id VARCHAR NOT NULL, ad_id VARCHAR NOT NULL,
             ad_type VARCHAR NOT NULL, event_type VARCHAR NOT NULL, event_time BIGINT NOT NULL,
             ip_address VARCHAR NOT NULL, WATERMARK FOR event_time AS event_time)
         WITH (connector = 'generator', kind = 'ysb', seed = '{SEED}', rate = '{RATE}', partitions = '2');
         CREATE TABLE campaigns (ad_id VARCHAR, campaign_id VARCHAR)
         WITH (connector = 'generator', kind = 'ysb_campaigns', seed = '{SEED}');
         CREATE TABLE results (window_start BIGINT, campaign_id VARCHAR, count BIGINT)
         WITH (connector = 'files', path = '{}');
         INSERT INTO results
         SELECT window_start, c.campaign_id, COUNT(*)
         FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(event_time), INTERVAL '10' SECOND)) e
         JOIN campaigns c ON e.ad_id = c.ad_id
         WHERE event_type = 'view'
         GROUP BY window_start, window_end, c.campaign_id;",
        results.display()
    );
    let path = dir.join("ysb.sql");
    std::fs::write(&path, script).expect("script");
    let summary = submit_script(&dir, &path);
    assert!(summary.contains("finished: 30 batches"), "{summary}");
    let job = Job { path, start_ms, end_ms: start_ms + 3_000, partitions: 2 };
    assert_exact(&job, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_gateway_pipeline_in_sql_ranks_and_totals_as_the_ground_truth_does() {
    let dir = test_dir("sql_gateway_exact");
    let spec = gateway_spec(GatewayEncoding::Counter, start_ms());
    let drained_wall_ms = spec.wall_ms(spec.drained_ms().expect("the gateways stop"));
    let duration_ms = (drained_wall_ms - spec.start_ms + 1_000) / 100 * 100;
    let script = format!(
        "SET 'batch.interval' = '100ms';
         SET 'duration' = '{duration_ms}ms';
         SET 'checkpoint.interval' = '500ms';
         SET 'state.ttl' = '2 d';
         SET 'state.max.keys' = '10000';
         CREATE TABLE readings (gateway_id VARCHAR NOT NULL, `date` BIGINT NOT NULL, ipTx DOUBLE NOT NULL,
             ipRx DOUBLE NOT NULL, WATERMARK FOR `date` AS `date` - INTERVAL '{lateness}' SECOND)
         WITH (connector = 'generator', kind = 'gateway', seed = '{seed}', gateways = '{gateways}',
             partitions = '2', encoding = 'counter', start_ms = '{start}', stop_ms = '{stop}',
             speedup = '{speedup}', report_interval_ms = '{report}', jitter_ms = '{jitter}',
             late_fraction = '{late}', max_delay_ms = '{delay}');
         CREATE TABLE results (day BIGINT, rank BIGINT, gateway_id VARCHAR, total DOUBLE)
         WITH (connector = 'files', path = '{results}');
         INSERT INTO results
         SELECT day, r, gateway_id, total FROM (
             SELECT `date` / 86400000 AS day, gateway_id, SUM(ipTx + ipRx) AS total,
                    ROW_NUMBER() OVER (PARTITION BY `date` / 86400000 ORDER BY SUM(ipTx + ipRx) DESC) AS r
             FROM TABLE(INCREMENTS(TABLE readings, DESCRIPTOR(gateway_id), DESCRIPTOR(ipTx, ipRx), 'counter'))
             GROUP BY `date` / 86400000, gateway_id)
         WHERE r <= {GATEWAYS};",
        lateness = spec.max_delay_ms / 1_000,
        seed = spec.seed,
        gateways = spec.gateways,
        start = spec.start_ms,
        stop = spec.stop_ms.expect("the gateways stop"),
        speedup = spec.speedup,
        report = spec.report_interval_ms,
        jitter = spec.jitter_ms,
        late = spec.late_fraction,
        delay = spec.max_delay_ms,
        results = dir.join("results").display(),
    );
    let path = dir.join("gateway.sql");
    std::fs::write(&path, script).expect("script");
    submit_script(&dir, &path);
    assert_matches_the_truth(&dir, &spec);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_script_is_refused_by_line_and_column_before_anything_runs() {
    let dir = test_dir("sql_refused");
    let path = dir.join("bad.sql");
    std::fs::write(
        &path,
        "CREATE TABLE t (a BIGINT, WATERMARK FOR a AS a) WITH (connector = 'generator', kind = 'ysb');\nSELECT b FROM t",
    )
    .expect("script");
    // No driver listens on port 9: a script that does not compile never reaches one.
    for args in [vec!["sql"], vec!["submit", "--driver", "127.0.0.1:9"]] {
        let mut command = sleet();
        command.args(&args).arg(&path);
        let output = run_with_limit(command, Duration::from_secs(20));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("bad.sql: line 2, column 8: unknown column `b`"), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
