//! `GET /v1/stream`: the dashboard's feed, one server-sent `update` event when the live view
//! tells its followers (every 2 s while a job runs, at once on a start, an end, a join or a
//! leave) with the cluster, the job, its batches and groups since the previous update, and
//! every fifth update the model of where its time goes.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::sse::{Event, Sse};
use futures_util::stream::{self, Stream};
use serde::{Deserialize, Serialize};
use sleet_driver::live::ClusterView;
use sleet_wire::clock::now_ms;
use sleet_wire::{BatchRecord, GroupRecord};

use crate::api::{AnalysisAnswer, JobAnswer};
use crate::Console;

/// With no job publishing, an update at least this often (the workers' heartbeat ages). Below
/// 4.096 s, where tokio's timer wheel turns coarser: a longer timer, set anew at every update,
/// would wake the thread early to be moved down a level.
const IDLE_UPDATE_EVERY: Duration = Duration::from_secs(3);
/// The model goes in every this many updates (the first included): where a batch's time goes
/// changes slowly, and modelling is the update's largest cost to the driver.
const ANALYSIS_EVERY: u64 = 5;

/// One update, serialized straight from the live view's records.
#[derive(Serialize)]
struct Update<'a> {
    cluster: ClusterView,
    job: Option<JobAnswer>,
    batches: BatchColumns,
    groups: GroupColumns,
    #[serde(skip_serializing_if = "Option::is_none")]
    analysis: Option<AnalysisAnswer<'a>>,
}

/// The batches since the previous update as columns, one array per field a plot needs: at
/// 10 ms batches a hundred go out a second, and as objects their field names were most of the
/// update's bytes and of the console's CPU. `GET /v1/jobs/{id}/batches` has them whole.
#[derive(Serialize, Default)]
struct BatchColumns {
    batch: Vec<u64>,
    launched_at_ms: Vec<i64>,
    finished_at_ms: Vec<i64>,
    events_in: Vec<u64>,
}

impl BatchColumns {
    fn push(&mut self, record: &BatchRecord) {
        self.batch.push(record.batch);
        self.launched_at_ms.push(record.launched_at_ms);
        self.finished_at_ms.push(record.finished_at_ms);
        self.events_in.push(record.events_in);
    }
}

/// The groups since the previous update as columns; `GET /v1/jobs/{id}/groups` has them whole.
#[derive(Serialize, Default)]
struct GroupColumns {
    group: Vec<u64>,
    completed_at_ms: Vec<i64>,
    size: Vec<u32>,
    overhead: Vec<f64>,
    overhead_average: Vec<Option<f64>>,
}

impl GroupColumns {
    fn push(&mut self, record: &GroupRecord) {
        self.group.push(record.group);
        self.completed_at_ms.push(record.completed_at_ms);
        self.size.push(record.size);
        self.overhead.push(to_a_ten_thousandth(record.overhead));
        self.overhead_average.push(record.overhead_average.map(to_a_ten_thousandth));
    }
}

/// A share as a plot shows it (0.01 % steps), which prints in a few digits rather than 17.
fn to_a_ten_thousandth(share: f64) -> f64 {
    (share * 10_000.0).round() / 10_000.0
}

#[derive(Deserialize)]
pub struct Follow {
    /// The job to follow; by default the running one, or the last that ended (and the next
    /// one once it starts).
    job: Option<u64>,
}

/// Where one subscriber's feed stands.
struct Feed {
    console: Console,
    pinned: Option<u64>,
    /// The job the previous update showed, and its newest batch and group then.
    shown: Option<(u64, Option<u64>, Option<u64>)>,
    /// Changes when the live view has something new (`LiveView::follow`). Woken by the
    /// driver's publication rather than a timer of its own, the update carries what was just
    /// published, and the thread wakes once per update.
    changes: tokio::sync::watch::Receiver<u64>,
    sent: u64,
}

pub async fn updates(
    State(console): State<Console>,
    Query(follow): Query<Follow>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let changes = console.driver.live.follow();
    let feed = Feed { console, pinned: follow.job, shown: None, changes, sent: 0 };
    let events = stream::unfold(feed, |mut feed| async move {
        if feed.sent > 0 {
            feed.next_change().await;
        }
        let event = feed.next_update();
        Some((Ok(event), feed))
    });
    // No keep-alive comments: an update goes out at least every `IDLE_UPDATE_EVERY` anyway,
    // and their 15 s timer, set anew at every update, woke the thread every few seconds to
    // move it down tokio's timer wheel.
    Sse::new(events)
}

impl Feed {
    async fn next_change(&mut self) {
        match tokio::time::timeout(IDLE_UPDATE_EVERY, self.changes.changed()).await {
            Ok(Ok(())) | Err(_) => {}
            // The live view is gone with its driver: no change will come.
            Ok(Err(_)) => tokio::time::sleep(IDLE_UPDATE_EVERY).await,
        }
    }

    fn next_update(&mut self) -> Event {
        let live = &self.console.driver.live;
        live.looking(now_ms());
        let id = self.pinned.or_else(|| live.current_job());
        let (after_batch, after_group) = match (self.shown, id) {
            (Some((shown, batch, group)), Some(id)) if shown == id => (batch, group),
            _ => (None, None),
        };
        // A job's definition (its job file, query and plan) goes in its first update only.
        let first_of_job = self.shown.is_none_or(|(shown, _, _)| Some(shown) != id);
        let job = id.and_then(|id| self.console.job_answer(id, first_of_job));
        let (mut batches, mut groups) = (BatchColumns::default(), GroupColumns::default());
        if let Some(id) = id {
            live.visit_batches(id, after_batch, |record| batches.push(record));
            live.visit_groups(id, after_group, |record| groups.push(record));
        }
        let glance =
            id.filter(|_| self.sent.is_multiple_of(ANALYSIS_EVERY)).and_then(|id| self.console.glance(id)).flatten();
        if let Some(id) = id {
            let newest_batch = batches.batch.iter().copied().max().or(after_batch);
            let newest_group = groups.group.iter().copied().max().or(after_group);
            self.shown = Some((id, newest_batch, newest_group));
        }
        self.sent += 1;
        let update = Update {
            cluster: live.cluster(),
            job,
            batches,
            groups,
            analysis: glance.as_deref().map(AnalysisAnswer::of),
        };
        let data = serde_json::to_string(&update).unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"));
        Event::default().event("update").data(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(batch: u64) -> BatchRecord {
        BatchRecord {
            batch,
            launched_at_ms: 1_000 + batch as i64 * 10,
            finished_at_ms: 1_004 + batch as i64 * 10,
            events_in: batch * 7,
            ..BatchRecord::default()
        }
    }

    #[test]
    fn columns_keep_each_batch_and_group_at_one_index_and_round_overheads() {
        let mut columns = BatchColumns::default();
        columns.push(&batch(3));
        columns.push(&batch(4));
        let columns = serde_json::to_value(columns).expect("columns");
        assert_eq!(
            columns,
            serde_json::json!({"batch": [3, 4], "launched_at_ms": [1030, 1040],
                               "finished_at_ms": [1034, 1044], "events_in": [21, 28]})
        );
        let group = |group: u64, overhead: f64, average: Option<f64>| GroupRecord {
            group,
            completed_at_ms: group as i64,
            size: 2,
            overhead,
            overhead_average: average,
            ..GroupRecord::default()
        };
        let mut columns = GroupColumns::default();
        columns.push(&group(1, 0.032217571842, None));
        columns.push(&group(2, 0.1, Some(0.06666)));
        let columns = serde_json::to_value(columns).expect("columns");
        assert_eq!(
            columns,
            serde_json::json!({"group": [1, 2], "completed_at_ms": [1, 2], "size": [2, 2],
                               "overhead": [0.0322, 0.1], "overhead_average": [null, 0.0667]})
        );
    }
}
