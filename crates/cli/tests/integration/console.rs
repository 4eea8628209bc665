//! The driver's console (`sleet driver --http`, docs/api.md) over real HTTP: a job submitted
//! and stopped through the API, its figures while it runs, the model and what-if answers, the
//! metrics, and the errors a client gets. The totals are checked against what the generator
//! emits, not against another of the engine's own figures.

use crate::common;

use std::time::{Duration, Instant};

use common::{start_serving_driver, start_worker, test_dir, ysb_job_file, Reaper};
use serde_json::Value;

pub struct Api {
    pub base: String,
    agent: ureq::Agent,
}

impl Api {
    fn new(http: &str) -> Api {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(15)))
            .build();
        Api { base: format!("http://{http}"), agent: config.into() }
    }

    /// The status and body of `GET path`.
    fn get_text(&self, path: &str) -> (u16, String) {
        let mut response = self.agent.get(format!("{}{path}", self.base)).call().expect("GET answered");
        let body = response.body_mut().read_to_string().expect("a text body");
        (response.status().as_u16(), body)
    }

    fn get(&self, path: &str) -> (u16, Value) {
        let (status, body) = self.get_text(path);
        (status, serde_json::from_str(&body).unwrap_or_else(|error| panic!("GET {path}: {error}: {body}")))
    }

    fn post(&self, path: &str, content_type: &str, body: &str) -> (u16, Value) {
        let request = self.agent.post(format!("{}{path}", self.base)).header("Content-Type", content_type);
        let mut response = request.send(body).expect("POST answered");
        let text = response.body_mut().read_to_string().expect("a text body");
        (response.status().as_u16(), serde_json::from_str(&text).unwrap_or_else(|e| panic!("POST {path}: {e}: {text}")))
    }

    /// Polls `GET path` until `done` holds for its body, within `limit`.
    fn wait_for(&self, path: &str, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let (status, body) = self.get(path);
            if status == 200 && done(&body) {
                return body;
            }
            assert!(started.elapsed() < limit, "GET {path} did not reach the state wanted within {limit:?}: {body}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// A cluster of a serving driver and two workers, and the API client.
fn serving_cluster() -> (Reaper, Api) {
    let (driver, address, http) = start_serving_driver(&["--expect-workers", "2"]);
    let processes = Reaper(vec![driver, start_worker(&address, &[]), start_worker(&address, &[])]);
    let api = Api::new(&http);
    api.wait_for("/v1/cluster", Duration::from_secs(20), |cluster| {
        cluster["workers"].as_array().map(Vec::len) == Some(2)
    });
    (processes, api)
}

/// The value of one series in the Prometheus text.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

#[test]
fn a_job_submitted_through_the_api_shows_its_figures_and_its_totals_match_the_generator() {
    let dir = test_dir("console_figures");
    // `sleet job ysb --rate 20000 --duration 6s`: 100 ms batches, 2 000 events each.
    let job = std::fs::read_to_string(ysb_job_file(&dir, "6s")).expect("the job file");
    let (_processes, api) = serving_cluster();

    let (status, page) = api.get_text("/");
    assert_eq!(status, 200);
    assert!(page.contains("/assets/dashboard.js"), "the page loads its script: {page}");
    assert_eq!(api.get_text("/assets/dashboard.js").0, 200);
    assert_eq!(api.get_text("/assets/dashboard.css").0, 200);

    let (_, cluster) = api.get("/v1/cluster");
    assert_eq!(cluster["api"], "v1");
    assert_eq!(cluster["running_job"], Value::Null);
    for worker in cluster["workers"].as_array().expect("workers") {
        assert!(worker["cores"].as_u64() >= Some(1), "{worker}");
        let age = worker["heartbeat_age_ms"].as_i64().expect("a heartbeat was heard");
        assert!((0..5_000).contains(&age), "{worker}");
    }

    let (status, accepted) = api.post("/v1/jobs", "application/json", &job);
    assert_eq!(status, 201, "{accepted}");
    let id = accepted["job"].as_u64().expect("the job's id");
    assert_eq!(accepted["workers"], 2);
    let (status, busy) = api.post("/v1/jobs", "application/json", &job);
    assert_eq!(status, 409, "a second job while one runs: {busy}");
    assert!(busy["error"].as_str().is_some_and(|error| error.contains("busy")), "{busy}");

    let path = format!("/v1/jobs/{id}");
    let running = api.wait_for(&path, Duration::from_secs(20), |job| {
        job["progress"]["batches_done"].as_u64().is_some_and(|done| done >= 10)
    });
    assert_eq!(running["state"], "running");
    assert_eq!(running["scheduler"], "group");
    assert_eq!(running["batch_interval_ms"], 100);
    assert!(running["plan"].as_str().is_some_and(|plan| plan.contains("stage")), "{}", running["plan"]);
    assert!(running["progress"]["group_size"].as_u64().is_some(), "{running}");
    let (_, cluster) = api.get("/v1/cluster");
    assert_eq!(cluster["running_job"], id);

    let (_, batches) = api.get(&format!("{path}/batches"));
    let numbers: Vec<u64> =
        batches["batches"].as_array().expect("batches").iter().filter_map(|b| b["batch"].as_u64()).collect();
    assert!(numbers.len() >= 5, "{batches}");
    assert!(numbers.windows(2).all(|pair| pair[0] < pair[1]), "oldest first, no repeats: {numbers:?}");
    let newest = *numbers.last().expect("some");
    let (_, after) = api.get(&format!("{path}/batches?after={newest}"));
    assert!(after["batches"].as_array().expect("batches").iter().all(|b| b["batch"].as_u64() > Some(newest)));
    let (_, groups) = api.get(&format!("{path}/groups"));
    assert!(!groups["groups"].as_array().expect("groups").is_empty(), "{groups}");

    let (status, analysis) = api.get(&format!("{path}/analysis"));
    assert_eq!(status, 200, "{analysis}");
    let bottleneck = analysis["bottleneck"].as_str().expect("a bottleneck");
    assert!(["cpu", "net", "disk", "coordination", "source"].contains(&bottleneck), "{bottleneck}");
    assert_eq!(analysis["interval_ms"], 100.0);
    let parts: Vec<&str> =
        analysis["breakdown"].as_array().expect("parts").iter().filter_map(|p| p["part"].as_str()).collect();
    assert_eq!(parts.first(), Some(&"wait_for_close"));
    assert_eq!(parts.last(), Some(&"end_to_end"));
    let used = analysis["utilization"].as_array().expect("utilization");
    assert!(used.iter().any(|u| u["resource"] == "cpu" && u["utilization_mean"].as_f64() > Some(0.0)), "{used:?}");

    let (status, whatif) = api.get(&format!("{path}/whatif?change=workers=2"));
    assert_eq!(status, 200, "{whatif}");
    assert!(whatif["predicted_batch_us"].as_f64().is_some_and(|us| us > 0.0), "{whatif}");
    let (status, bad) = api.get(&format!("{path}/whatif?change=wings=2"));
    assert_eq!(status, 400);
    assert!(bad["error"].as_str().is_some_and(|error| error.contains("wings")), "{bad}");

    let (status, metrics) = api.get_text("/metrics");
    assert_eq!(status, 200);
    assert_eq!(metric(&metrics, "sleet_workers"), Some(2.0), "{metrics}");
    assert_eq!(metric(&metrics, &format!("sleet_job_running{{job=\"{id}\"}}")), Some(1.0), "{metrics}");
    assert!(metrics.contains("sleet_worker_utilization_ratio{worker="), "{metrics}");
    assert!(metrics.contains("# TYPE sleet_job_events_total counter"), "{metrics}");

    let ended = api.wait_for(&path, Duration::from_secs(30), |job| job["state"] != "running");
    assert_eq!(ended["state"], "finished", "{ended}");
    // Ground truth: the generator emits its rate × the duration, and 6 s are 60 batches.
    assert_eq!(ended["progress"]["events_in"], 120_000, "{ended}");
    assert_eq!(ended["progress"]["batches_done"], 60, "{ended}");
    let (_, metrics) = api.get_text("/metrics");
    assert_eq!(metric(&metrics, &format!("sleet_job_events_total{{job=\"{id}\"}}")), Some(120_000.0), "{metrics}");
    assert_eq!(metric(&metrics, &format!("sleet_job_batches_total{{job=\"{id}\"}}")), Some(60.0), "{metrics}");
    assert_eq!(metric(&metrics, &format!("sleet_job_running{{job=\"{id}\"}}")), Some(0.0), "{metrics}");
    let (_, jobs) = api.get("/v1/jobs");
    assert_eq!(jobs["jobs"][0]["id"], id);

    // `sleet status` reads the same API, for a person and as JSON.
    let http = api.base.trim_start_matches("http://").to_string();
    let mut status = common::sleet();
    status.args(["status", "--http", &http]);
    let output = common::run_with_limit(status, Duration::from_secs(20));
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{said}{}", String::from_utf8_lossy(&output.stderr));
    assert!(said.contains(&format!("job {id} `ysb`: finished (group scheduler, 100 ms batches)")), "{said}");
    assert!(said.contains("batches 60 |") && said.contains("events in 120000"), "{said}");
    assert_eq!(said.matches("  worker ").count(), 2, "{said}");
    let mut status = common::sleet();
    status.args(["status", "--http", &http, "--json"]);
    let output = common::run_with_limit(status, Duration::from_secs(20));
    let answer: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(answer["job"]["progress"]["events_in"], 120_000, "{answer}");
    assert_eq!(answer["cluster"]["workers"].as_array().map(Vec::len), Some(2), "{answer}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_job_is_stopped_through_the_api_and_bad_requests_are_named() {
    let dir = test_dir("console_stop");
    let job = std::fs::read_to_string(ysb_job_file(&dir, "60s")).expect("the job file");
    let (_processes, api) = serving_cluster();

    let (status, refused) = api.post("/v1/jobs", "application/sql", "SELECT nope FROM nowhere;");
    assert_eq!(status, 400, "{refused}");
    let error = refused["error"].as_str().expect("an error");
    assert!(error.contains("nowhere") && error.contains("line 1"), "{error}");
    let (status, refused) = api.post("/v1/jobs", "application/json", "{\"plan\": 3}");
    assert_eq!(status, 400);
    assert!(refused["error"].as_str().is_some_and(|error| error.contains("job file")), "{refused}");
    let (status, refused) = api.post("/v1/jobs", "image/png", "…");
    assert_eq!(status, 400);
    assert!(refused["error"].as_str().is_some_and(|error| error.contains("image/png")), "{refused}");
    assert_eq!(api.get("/v1/jobs/77").0, 404);
    assert_eq!(api.get("/v1/jobs/77/analysis").0, 404);
    let (status, nowhere) = api.get("/v2/anything");
    assert_eq!(status, 404);
    assert!(nowhere["error"].as_str().is_some_and(|error| error.contains("/v2/anything")), "{nowhere}");

    let (status, accepted) = api.post("/v1/jobs", "application/json", &job);
    assert_eq!(status, 201, "{accepted}");
    let id = accepted["job"].as_u64().expect("the job's id");
    let path = format!("/v1/jobs/{id}");
    api.wait_for(&path, Duration::from_secs(20), |job| job["progress"]["batches_done"].as_u64() >= Some(5));
    let (status, stopping) = api.post(&format!("{path}/stop"), "application/json", "");
    assert_eq!(status, 202, "{stopping}");
    let ended = api.wait_for(&path, Duration::from_secs(20), |job| job["state"] != "running");
    assert_eq!(ended["state"], "stopped", "{ended}");
    let done = ended["progress"]["batches_done"].as_u64().expect("batches");
    assert!((5..600).contains(&done), "stopped well before its 600 batches: {done}");
    // Every batch that ran read its 2 000 events: a stop ends on a batch boundary.
    assert_eq!(ended["progress"]["events_in"].as_u64(), Some(done * 2_000), "{ended}");
    let (status, again) = api.post(&format!("{path}/stop"), "application/json", "");
    assert_eq!(status, 404, "{again}");
    assert!(again["error"].as_str().is_some_and(|error| error.contains("stopped")), "{again}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The figures the page shows, as `data-value`s, by `data-field`.
const SHOWN_FIELDS: &str = "Object.fromEntries([...document.querySelectorAll('[data-field]')]\
    .map(element => [element.dataset.field, element.dataset.value ?? element.textContent]))";

#[test]
fn the_dashboard_in_headless_chromium_shows_the_numbers_the_api_gives() {
    let dir = test_dir("console_browser");
    let job = std::fs::read_to_string(ysb_job_file(&dir, "8s")).expect("the job file");
    let (_processes, api) = serving_cluster();
    let (status, accepted) = api.post("/v1/jobs", "application/json", &job);
    assert_eq!(status, 201, "{accepted}");
    let id = accepted["job"].as_u64().expect("the job's id");

    let browser = crate::browser::Browser::launch(&dir.join("chromium-profile"));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let mut page = browser.open(&format!("{}/?job={id}", api.base)).await;
        // Live: updates arrive while the job runs, and the page says so.
        page.wait_until("Number(document.body.dataset.updates) >= 2", Duration::from_secs(20)).await;
        page.wait_until(
            "document.querySelector('[data-field=\"job-state\"]').dataset.value === 'running' && \
             Number(document.querySelector('[data-field=\"events-per-s\"]').dataset.value) > 0",
            Duration::from_secs(20),
        )
        .await;
        let screenshot = page.screenshot().await;
        assert_eq!(&screenshot[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
        // Kept where the build's temporary files go, for a look at what the page showed.
        let kept = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
        std::fs::write(kept, &screenshot).expect("the screenshot kept");

        // Once the job ends its figures stop changing, so the page's and the API's must agree.
        let path = format!("/v1/jobs/{id}");
        let ended = api.wait_for(&path, Duration::from_secs(30), |job| job["state"] == "finished");
        page.wait_until(
            "document.querySelector('[data-field=\"job-state\"]').dataset.value === 'finished'",
            Duration::from_secs(20),
        )
        .await;
        let updates = page.evaluate("Number(document.body.dataset.updates)").await;
        page.wait_until(&format!("Number(document.body.dataset.updates) > {updates}"), Duration::from_secs(10)).await;
        let shown = page.evaluate(SHOWN_FIELDS).await;
        let progress = &ended["progress"];
        let number = |field: &str| -> Option<f64> { shown[field].as_str().and_then(|text| text.parse().ok()) };
        assert_eq!(number("job-id"), Some(id as f64), "{shown}");
        assert_eq!(shown["job-state"], "finished", "{shown}");
        assert_eq!(number("workers"), Some(2.0), "{shown}");
        for (field, key) in [
            ("batches-done", "batches_done"),
            ("dead-letters", "dead_letters"),
            ("lag-ms", "lag_ms"),
            ("events-per-s", "events_per_s"),
            ("latency-p50", "window_latency_ms_p50"),
            ("latency-p99", "window_latency_ms_p99"),
            ("group-size", "group_size"),
            ("overhead", "overhead"),
        ] {
            // serde_json reads floats to within an ulp (no `float_roundtrip`), the page exactly.
            let same = match (number(field), progress[key].as_f64()) {
                (Some(page), Some(api)) => (page - api).abs() <= 1e-12 * api.abs().max(1.0),
                (page, api) => page == api,
            };
            assert!(same, "{field} against {key}: page {shown}, API {progress}");
        }
        assert_eq!(shown["bottleneck"], progress["bottleneck"], "page {shown}, API {progress}");
        assert_eq!(number("batches-done"), Some(80.0), "8 s of 100 ms batches");
    });
    drop(browser);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cluster_with_a_secret_refuses_strangers_and_serves_those_who_hold_it() {
    let dir = test_dir("console_secret");
    let secret_file = dir.join("cluster.secret");
    std::fs::write(&secret_file, "a-test-cluster-secret-0123456789\n").expect("the secret written");
    let wrong_file = dir.join("wrong.secret");
    std::fs::write(&wrong_file, "another-cluster-secret-abcdefghi\n").expect("the other secret written");
    let (secret, wrong) = (secret_file.to_str().expect("utf-8"), wrong_file.to_str().expect("utf-8"));
    let job = ysb_job_file(&dir, "2s");

    // Without a secret, a driver refuses to listen beyond loopback, and says why.
    let mut exposed = common::sleet();
    exposed.args(["driver", "--listen", "0.0.0.0:0"]);
    let output = common::run_with_limit(exposed, Duration::from_secs(20));
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("--listen 0.0.0.0:0") && said.contains("--secret-file"), "{said}");

    let (driver, address, http) = start_serving_driver(&["--secret-file", secret]);
    let mut processes = Reaper(vec![driver]);

    // A worker with another secret is refused at once, and told why.
    let mut stranger = common::sleet();
    stranger.args(["worker", "--driver", &address, "--secret-file", wrong, "--driver-reconnect", "0"]);
    let output = common::run_with_limit(stranger, Duration::from_secs(20));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("authentication failed") && said.contains("holds another cluster secret"), "{said}");
    processes.0.push(start_worker(&address, &["--secret-file", secret]));

    // The API wants the token derived from the secret.
    let api = Api::new(&http);
    let (status, refused) = api.get("/v1/cluster");
    assert_eq!(status, 401, "{refused}");
    assert!(refused["error"].as_str().is_some_and(|error| error.contains("token")), "{refused}");
    assert_eq!(api.get("/v1/cluster?token=0000").0, 401, "a wrong token");
    assert_eq!(api.get_text("/metrics").0, 401);
    assert_eq!(api.get_text("/").0, 200, "the page itself holds no figures");
    let mut token_command = common::sleet();
    token_command.args(["token", "--secret-file", secret]);
    let output = common::run_with_limit(token_command, Duration::from_secs(20));
    assert!(output.status.success());
    let token = String::from_utf8_lossy(&output.stdout).trim().to_string();
    assert_eq!(token.len(), 64, "{token}");
    assert!(!token.contains("a-test-cluster-secret"), "the token is not the secret");
    let cluster = api.wait_for(&format!("/v1/cluster?token={token}"), Duration::from_secs(20), |cluster| {
        cluster["workers"].as_array().map(Vec::len) == Some(1)
    });
    assert_eq!(cluster["workers"][0]["cores"], 1);

    // A client without the secret is refused; one with it runs its job.
    let mut anonymous = common::sleet();
    anonymous.arg("submit").arg(&job).args(["--driver", &address]);
    let output = common::run_with_limit(anonymous, Duration::from_secs(20));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("requires a cluster secret"), "{said}");
    let mut member = common::sleet();
    member
        .arg("submit")
        .arg(&job)
        .args(["--driver", &address, "--json"])
        .env("SLEET_SECRET", "a-test-cluster-secret-0123456789");
    let output = common::run_with_limit(member, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let last: Value = serde_json::from_str(stdout.lines().last().expect("a summary line")).expect("JSON");
    assert_eq!(last["summary"]["batches_total"], 20, "{last}");
    assert_eq!(last["summary"]["events_in"], 40_000, "{last}");
    let _ = std::fs::remove_dir_all(&dir);
}
