//! `GET /v1/stream`: the dashboard's feed, one server-sent `update` event about once a second
//! with the cluster, the job, its batches and groups since the previous update, and every
//! tenth second the model of where its time goes.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use serde::{Deserialize, Serialize};
use sleet_driver::live::ClusterView;
use sleet_wire::clock::now_ms;
use sleet_wire::{BatchRecord, GroupRecord};

use crate::api::{AnalysisAnswer, JobAnswer};
use crate::Console;

const UPDATE_EVERY: Duration = Duration::from_secs(1);
/// The model goes in every this many updates (the first included): where a batch's time goes
/// changes slowly, and modelling is the update's largest cost to the driver.
const ANALYSIS_EVERY: u64 = 10;

/// One update, serialized straight from the live view's records.
#[derive(Serialize)]
struct Update<'a> {
    cluster: ClusterView,
    job: Option<JobAnswer>,
    batches: Vec<BatchPoint>,
    groups: Vec<GroupPoint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    analysis: Option<AnalysisAnswer<'a>>,
}

/// A batch as the stream carries it: what a plot of throughput, lag and batch time needs. At
/// 10 ms batches a hundred go out a second, so every field left out counts;
/// `GET /v1/jobs/{id}/batches` has them whole.
#[derive(Serialize)]
struct BatchPoint {
    batch: u64,
    group: Option<u64>,
    scheduled_end_ms: i64,
    launched_at_ms: i64,
    finished_at_ms: i64,
    events_in: u64,
    dead_letters: u64,
}

impl From<&BatchRecord> for BatchPoint {
    fn from(record: &BatchRecord) -> Self {
        BatchPoint {
            batch: record.batch,
            group: record.group,
            scheduled_end_ms: record.scheduled_end_ms,
            launched_at_ms: record.launched_at_ms,
            finished_at_ms: record.finished_at_ms,
            events_in: record.events_in,
            dead_letters: record.dead_letters,
        }
    }
}

/// A group as the stream carries it; `GET /v1/jobs/{id}/groups` has it whole.
#[derive(Serialize)]
struct GroupPoint {
    group: u64,
    first_batch: u64,
    size: u32,
    completed_at_ms: i64,
    overhead: f64,
    overhead_average: Option<f64>,
}

impl From<&GroupRecord> for GroupPoint {
    fn from(record: &GroupRecord) -> Self {
        GroupPoint {
            group: record.group,
            first_batch: record.first_batch,
            size: record.size,
            completed_at_ms: record.completed_at_ms,
            overhead: record.overhead,
            overhead_average: record.overhead_average,
        }
    }
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
    ticks: tokio::time::Interval,
    sent: u64,
}

pub async fn updates(
    State(console): State<Console>,
    Query(follow): Query<Follow>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut ticks = tokio::time::interval(UPDATE_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let feed = Feed { console, pinned: follow.job, shown: None, ticks, sent: 0 };
    let events = stream::unfold(feed, |mut feed| async move {
        feed.ticks.tick().await;
        let event = feed.next_update();
        Some((Ok(event), feed))
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

impl Feed {
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
        let batches = id.and_then(|id| live.batches(id, after_batch)).unwrap_or_default();
        let groups = id.and_then(|id| live.groups(id, after_group)).unwrap_or_default();
        let glance =
            id.filter(|_| self.sent.is_multiple_of(ANALYSIS_EVERY)).and_then(|id| self.console.glance(id)).flatten();
        if let Some(id) = id {
            let newest_batch = batches.iter().map(|batch| batch.batch).max().or(after_batch);
            let newest_group = groups.iter().map(|group| group.group).max().or(after_group);
            self.shown = Some((id, newest_batch, newest_group));
        }
        self.sent += 1;
        let update = Update {
            cluster: live.cluster(),
            job,
            batches: batches.iter().map(BatchPoint::from).collect(),
            groups: groups.iter().map(GroupPoint::from).collect(),
            analysis: glance.as_deref().map(AnalysisAnswer::of),
        };
        let data = serde_json::to_string(&update).unwrap_or_else(|error| format!("{{\"error\": \"{error}\"}}"));
        Event::default().event("update").data(data)
    }
}
