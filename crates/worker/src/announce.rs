//! Push metadata: when a map task ends, its worker tells the owner of every reduce partition
//! what it holds for that partition (pull data: the reducer fetches the blocks itself).
//!
//! Every map task announces to every reduce partition's owner, empty outputs included: a
//! reduce task becomes ready by counting one announcement per map partition, so silence
//! about an empty block would stall it forever. Announcements to this worker's own
//! partitions skip the network.
//!
//! Announcements are the most numerous messages of a large cluster (map tasks × reduce
//! partitions per batch), and on loopback each frame costs a few microseconds of kernel time
//! at both ends. So each peer has an outbox: a map task appends fixed-size entries to it, and
//! the peer's writer sends what has gathered as one frame. While more map tasks of this
//! worker are still running or queued, the writer waits for their entries too, for at most
//! `COALESCE_WAIT` and `ANNOUNCEMENTS_PER_FRAME_MAX`. When nothing else is under way, the
//! common case of a job that keeps up with its input, an announcement goes out at once.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sleet_plan::StageId;
use sleet_wire::{
    AnnouncedBlock, BlockMeta, BlocksAnnounced, Connection, PartitionOwner, PeerRequest, Role, TaskId, WorkerId,
};
use tokio::sync::{mpsc, Notify};

use crate::error::WorkerError;

/// Bound on entries waiting in one peer's outbox; a full outbox makes map tasks wait.
const OUTBOX_ENTRIES_MAX: usize = 16_384;
/// Bound on the entries one frame carries.
const ANNOUNCEMENTS_PER_FRAME_MAX: usize = 4096;
/// The longest an announcement waits for others while map tasks are still under way.
const COALESCE_WAIT: Duration = Duration::from_millis(1);

/// Where the next stage's partitions live, as the group launch said, grouped by owner once
/// per group so that a map task's announcement walks a prepared list.
#[derive(Debug, Clone, PartialEq)]
pub struct Downstream {
    pub reduce_stage: StageId,
    /// How many reduce partitions the stage has.
    reduce_partitions: usize,
    by_owner: Vec<OwnedPartitions>,
}

#[derive(Debug, Clone, PartialEq)]
struct OwnedPartitions {
    worker: WorkerId,
    address: String,
    partitions: Vec<u32>,
}

impl Downstream {
    /// `owners[p]` owns reduce partition `p`.
    pub fn new(reduce_stage: StageId, owners: &[PartitionOwner]) -> Self {
        let mut by_address: BTreeMap<&str, OwnedPartitions> = BTreeMap::new();
        for (partition, owner) in owners.iter().enumerate() {
            by_address
                .entry(owner.address.as_str())
                .or_insert_with(|| OwnedPartitions {
                    worker: owner.worker,
                    address: owner.address.clone(),
                    partitions: Vec::new(),
                })
                .partitions
                .push(partition as u32);
        }
        Downstream { reduce_stage, reduce_partitions: owners.len(), by_owner: by_address.into_values().collect() }
    }
}

pub struct Announcer {
    worker: WorkerId,
    address: String,
    local: mpsc::Sender<BlocksAnnounced>,
    links: Mutex<HashMap<String, Arc<Outbox>>>,
    under_way: Arc<MapTasksUnderWay>,
}

/// Map tasks of this worker that will announce but have not yet.
#[derive(Default)]
struct MapTasksUnderWay {
    count: AtomicUsize,
    none_left: Notify,
}

/// Held by a map task from launch until its announcement is queued (or it fails).
pub struct AnnouncementDue {
    under_way: Arc<MapTasksUnderWay>,
}

impl Drop for AnnouncementDue {
    fn drop(&mut self) {
        if self.under_way.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.under_way.none_left.notify_waiters();
        }
    }
}

/// Entries waiting for one peer's writer.
#[derive(Default)]
struct Outbox {
    entries: Mutex<Vec<AnnouncedBlock>>,
    /// Entries were added.
    filled: Notify,
    /// The writer took entries, or stopped.
    drained: Notify,
    /// The writer stopped (its connection failed): nothing more will be sent.
    closed: AtomicBool,
}

impl Announcer {
    /// `local` is this worker's own announcement queue (its scheduler reads it).
    pub fn new(worker: WorkerId, address: String, local: mpsc::Sender<BlocksAnnounced>) -> Self {
        Announcer { worker, address, local, links: Mutex::default(), under_way: Arc::default() }
    }

    /// A map task that will announce its output was launched.
    pub fn announcement_due(&self) -> AnnouncementDue {
        self.under_way.count.fetch_add(1, Ordering::AcqRel);
        AnnouncementDue { under_way: Arc::clone(&self.under_way) }
    }

    pub async fn announce(
        &self,
        map_task: TaskId,
        downstream: &Downstream,
        blocks: &[BlockMeta],
        event_time_ms: Option<i64>,
    ) -> Result<(), WorkerError> {
        let metas = metas_by_partition(downstream.reduce_partitions, blocks);
        for owner in &downstream.by_owner {
            let entries = owner.partitions.iter().map(|&partition| AnnouncedBlock {
                map_task,
                reduce_stage: downstream.reduce_stage,
                meta: metas[partition as usize],
                event_time_ms,
            });
            let sent = if owner.address == self.address {
                let announcement = BlocksAnnounced {
                    holder: self.worker,
                    holder_address: self.address.clone(),
                    entries: entries.collect(),
                };
                self.local.send(announcement).await.is_ok()
            } else {
                self.link(&owner.address).push(entries).await
            };
            if !sent {
                return Err(WorkerError::Announce { worker: owner.worker, address: owner.address.clone() });
            }
        }
        Ok(())
    }

    /// The outbox towards one peer, with a writer task that owns the connection. An outbox
    /// whose writer stopped is replaced, so a later announcement tries a fresh connection.
    fn link(&self, address: &str) -> Arc<Outbox> {
        let mut links = self.links.lock().expect("announcer links lock");
        if let Some(outbox) = links.get(address).filter(|outbox| !outbox.closed.load(Ordering::Acquire)) {
            return Arc::clone(outbox);
        }
        let outbox = Arc::new(Outbox::default());
        tokio::spawn(write_announcements(
            address.to_string(),
            self.worker,
            self.address.clone(),
            Arc::clone(&outbox),
            Arc::clone(&self.under_way),
        ));
        links.insert(address.to_string(), Arc::clone(&outbox));
        outbox
    }
}

impl Outbox {
    /// Appends one map task's entries, waiting while the outbox is full. False when the
    /// writer has stopped.
    async fn push(&self, entries: impl Iterator<Item = AnnouncedBlock>) -> bool {
        loop {
            // Registered before the check, so a drain in between is not missed.
            let drained = self.drained.notified();
            {
                let mut queued = self.entries.lock().expect("outbox lock");
                if self.closed.load(Ordering::Acquire) {
                    return false;
                }
                if queued.len() < OUTBOX_ENTRIES_MAX {
                    queued.extend(entries);
                    drop(queued);
                    self.filled.notify_one();
                    return true;
                }
            }
            drained.await;
        }
    }

    fn len(&self) -> usize {
        self.entries.lock().expect("outbox lock").len()
    }

    /// Takes up to a frame's worth of entries, oldest first.
    fn take_frame(&self) -> Vec<AnnouncedBlock> {
        let mut queued = self.entries.lock().expect("outbox lock");
        let taken = if queued.len() <= ANNOUNCEMENTS_PER_FRAME_MAX {
            std::mem::take(&mut *queued)
        } else {
            queued.drain(..ANNOUNCEMENTS_PER_FRAME_MAX).collect()
        };
        drop(queued);
        self.drained.notify_waiters();
        taken
    }
}

/// Every reduce partition's entry: the map task's block for it, or an empty one.
fn metas_by_partition(reduce_partitions: usize, blocks: &[BlockMeta]) -> Vec<BlockMeta> {
    let mut metas: Vec<BlockMeta> = (0..reduce_partitions as u32)
        .map(|reduce_partition| BlockMeta { reduce_partition, rows: 0, bytes: 0 })
        .collect();
    for block in blocks {
        let entry = metas
            .get_mut(block.reduce_partition as usize)
            .unwrap_or_else(|| panic!("block for reduce partition {} of {reduce_partitions}", block.reduce_partition));
        assert_eq!(entry.rows, 0, "two blocks for reduce partition {}", block.reduce_partition);
        *entry = *block;
    }
    metas
}

/// Sends what gathers in one peer's outbox as frames, after waiting (briefly) for the
/// announcements of map tasks still under way on this worker.
async fn write_announcements(
    address: String,
    holder: WorkerId,
    holder_address: String,
    outbox: Arc<Outbox>,
    under_way: Arc<MapTasksUnderWay>,
) {
    let result: Result<std::convert::Infallible, sleet_wire::WireError> = async {
        let mut connection = Connection::connect(&address, Role::Peer).await?;
        loop {
            // `notify_one` keeps a permit, so entries pushed before this wait are not missed.
            while outbox.len() == 0 {
                outbox.filled.notified().await;
            }
            let deadline = tokio::time::Instant::now() + COALESCE_WAIT;
            while outbox.len() < ANNOUNCEMENTS_PER_FRAME_MAX {
                // Registered before the count is read, so a task finishing in between wakes us.
                let none_left = under_way.none_left.notified();
                if under_way.count.load(Ordering::Acquire) == 0 {
                    break;
                }
                tokio::select! {
                    _ = outbox.filled.notified() => {}
                    _ = none_left => {}
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
            let entries = outbox.take_frame();
            let announcement = BlocksAnnounced { holder, holder_address: holder_address.clone(), entries };
            connection.send_binary(&PeerRequest::Announce(announcement)).await?;
        }
    }
    .await;
    let Err(error) = result;
    outbox.closed.store(true, Ordering::Release);
    outbox.drained.notify_waiters();
    eprintln!("sleet worker: announcing blocks to {address} failed ({error}); its reduce tasks cannot start");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(worker: WorkerId) -> PartitionOwner {
        PartitionOwner { worker, address: format!("w{worker}") }
    }

    #[test]
    fn partitions_are_grouped_by_owner_once() {
        let downstream = Downstream::new(StageId(1), &[owner(1), owner(2), owner(1)]);
        let summary: Vec<(&str, WorkerId, &[u32])> = downstream
            .by_owner
            .iter()
            .map(|owned| (owned.address.as_str(), owned.worker, owned.partitions.as_slice()))
            .collect();
        assert_eq!(summary, vec![("w1", 1, &[0, 2][..]), ("w2", 2, &[1][..])]);
        assert_eq!(downstream.reduce_partitions, 3);
    }

    #[test]
    fn every_partition_gets_an_entry_empty_ones_included() {
        let blocks = [BlockMeta { reduce_partition: 2, rows: 5, bytes: 80 }];
        let rows: Vec<(u32, u64)> =
            metas_by_partition(3, &blocks).iter().map(|meta| (meta.reduce_partition, meta.rows)).collect();
        assert_eq!(rows, vec![(0, 0), (1, 0), (2, 5)]);
    }

    #[test]
    #[should_panic(expected = "two blocks for reduce partition 1")]
    fn two_blocks_for_one_partition_are_a_bug() {
        let block = BlockMeta { reduce_partition: 1, rows: 1, bytes: 8 };
        metas_by_partition(2, &[block, block]);
    }

    #[test]
    fn an_outbox_hands_out_frames_oldest_first_and_bounded() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let outbox = Outbox::default();
        let entry = |batch| AnnouncedBlock {
            map_task: TaskId { job: 1, stage: StageId(0), partition: 0, batch },
            reduce_stage: StageId(1),
            meta: BlockMeta { reduce_partition: 0, rows: 0, bytes: 0 },
            event_time_ms: None,
        };
        let total = ANNOUNCEMENTS_PER_FRAME_MAX as u64 + 3;
        runtime.block_on(async {
            for batch in 0..total {
                assert!(outbox.push(std::iter::once(entry(batch))).await);
            }
        });
        let first = outbox.take_frame();
        assert_eq!(first.len(), ANNOUNCEMENTS_PER_FRAME_MAX);
        assert_eq!(first[0].map_task.batch, 0);
        let rest: Vec<u64> = outbox.take_frame().iter().map(|entry| entry.map_task.batch).collect();
        assert_eq!(rest, vec![total - 3, total - 2, total - 1]);
        outbox.closed.store(true, Ordering::Release);
        assert!(!runtime.block_on(outbox.push(std::iter::once(entry(0)))), "a closed outbox refuses entries");
    }
}
