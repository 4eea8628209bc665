//! `sleet status`: how a cluster and its current job stand, asked of the driver's HTTP API
//! (`driver --http`), for a person or (`--json`) for a script.

use anyhow::{Context, Result};
use serde_json::Value;

/// Bound on each request: a driver that does not answer in this time is reported as such.
const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// GET `path` of the API at `http` (`host:port`), showing `token` if given.
fn get(http: &str, path: &str, token: Option<&str>) -> Result<Value> {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(ANSWER_WAIT)).build().into();
    let mut request = agent.get(format!("http://{http}{path}"));
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let mut response = request.call().with_context(|| format!("asking the driver's API at http://{http}{path}"))?;
    let status = response.status();
    let body: Value = serde_json::from_str(&response.body_mut().read_to_string()?)
        .with_context(|| format!("http://{http}{path} did not answer JSON: is it a sleet driver's --http address?"))?;
    anyhow::ensure!(status.is_success(), "http://{http}{path}: {}", body["error"].as_str().unwrap_or("refused"));
    Ok(body)
}

/// The cluster and the current job (running, or the last that ended), as the API gives them.
pub fn fetch(http: &str, token: Option<&str>) -> Result<Value> {
    let cluster = get(http, "/v1/cluster", token)?;
    let jobs = get(http, "/v1/jobs", token)?;
    let current = cluster["running_job"].as_u64().or_else(|| jobs["jobs"][0]["id"].as_u64());
    let job = match current {
        Some(id) => get(http, &format!("/v1/jobs/{id}"), token)?,
        None => Value::Null,
    };
    Ok(serde_json::json!({ "cluster": cluster, "job": job }))
}

/// The same for a person: the driver and its workers, then the job's state and figures.
pub fn describe(status: &Value) -> String {
    let cluster = &status["cluster"];
    let driver = &cluster["driver"];
    let workers = cluster["workers"].as_array().cloned().unwrap_or_default();
    let mut out = format!("driver {} (pid {}), {} workers\n", driver["address"], driver["pid"], workers.len());
    for worker in &workers {
        let heartbeat = worker["heartbeat_age_ms"].as_i64().map_or("never".to_string(), |ms| format!("{ms} ms ago"));
        out += &format!(
            "  worker {} {} (pid {}, {} cores, shuffle on {}), last heartbeat {heartbeat}\n",
            worker["id"],
            worker["name"].as_str().unwrap_or("?"),
            worker["pid"],
            worker["cores"],
            worker["shuffle_address"].as_str().unwrap_or("?")
        );
    }
    let job = &status["job"];
    if job.is_null() {
        return out + "no job has run on this driver yet\n";
    }
    out += &format!(
        "job {} `{}`: {} ({} scheduler, {} ms batches)\n",
        job["id"],
        job["name"].as_str().unwrap_or("?"),
        job["state"].as_str().unwrap_or("?"),
        job["scheduler"].as_str().unwrap_or("?"),
        job["batch_interval_ms"]
    );
    if let Some(reason) = job["reason"].as_str() {
        out += &format!("  failed: {reason}\n");
    }
    if let Ok(progress) = serde_json::from_value::<sleet_wire::JobProgress>(job["progress"].clone()) {
        out += &format!(
            "  batches {} | {:.0} events/s | events in {} | lag {} ms | window p50 {} p99 {} | dead letters {}{}\n",
            progress.batches_done,
            progress.events_per_s,
            progress.events_in,
            progress.lag_ms,
            progress.window_latency_ms_p50.map_or("-".into(), |ms| format!("{ms:.0} ms")),
            progress.window_latency_ms_p99.map_or("-".into(), |ms| format!("{ms:.0} ms")),
            progress.dead_letters,
            crate::client::status_tail(&progress)
        );
    }
    let checkpoints = &job["checkpoints"];
    if checkpoints["taken"].as_u64().unwrap_or(0) > 0 {
        out +=
            &format!("  checkpoints {}, the latest after batch {}\n", checkpoints["taken"], checkpoints["last_batch"]);
    }
    for recovery in job["recoveries"].as_array().into_iter().flatten() {
        if let Ok(recovery) = serde_json::from_value::<sleet_wire::RecoveryRecord>(recovery.clone()) {
            out += &format!("  {}\n", crate::client::describe_recovery(&recovery));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_job_and_an_empty_driver_are_described() {
        let status = serde_json::json!({
            "cluster": {"driver": {"address": "127.0.0.1:7077", "pid": 7}, "workers": [
                {"id": 1, "name": "w1", "pid": 8, "cores": 1, "shuffle_address": "127.0.0.1:9", "heartbeat_age_ms": 12}]},
            "job": {"id": 3, "name": "ysb", "state": "running", "scheduler": "group", "batch_interval_ms": 10,
                    "reason": null, "checkpoints": {"taken": 2, "last_batch": 199},
                    "progress": {"job": 3, "batches_done": 200, "events_in": 4000, "events_per_s": 2000.0,
                                 "dead_letters": 0, "window_latency_ms_p50": 20.0, "window_latency_ms_p99": null,
                                 "lag_ms": 1, "group_size": 8, "overhead": 0.05}}
        });
        let text = describe(&status);
        assert!(text.contains("driver \"127.0.0.1:7077\" (pid 7), 1 workers"), "{text}");
        assert!(
            text.contains("worker 1 w1 (pid 8, 1 cores, shuffle on 127.0.0.1:9), last heartbeat 12 ms ago"),
            "{text}"
        );
        assert!(text.contains("job 3 `ysb`: running (group scheduler, 10 ms batches)"), "{text}");
        assert!(text.contains("batches 200 | 2000 events/s") && text.contains("p50 20 ms p99 -"), "{text}");
        assert!(text.contains("group 8, overhead 5.0%") && text.contains("the latest after batch 199"), "{text}");

        let empty = serde_json::json!({"cluster": {"driver": {"address": "a", "pid": 1}, "workers": []}, "job": null});
        assert!(describe(&empty).ends_with("no job has run on this driver yet\n"));
    }
}
