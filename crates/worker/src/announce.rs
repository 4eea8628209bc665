//! Push metadata: when a map task ends, its worker tells the owner of every reduce partition
//! what it holds for that partition (pull data: the reducer fetches the blocks itself).
//!
//! One announcement goes to each owning worker per map task, listing every partition that
//! worker owns, empty outputs included: a reduce task becomes ready by counting one
//! announcement per map partition, so silence about an empty block would stall it forever.
//! Announcements to this worker's own partitions skip the network.
//!
//! Every map task tells every reduce-owning worker, so on a large cluster announcements are
//! the most numerous messages there are, and on loopback each costs a few microseconds of
//! kernel time at both ends. A link therefore sends what is queued as one frame, and while
//! more map tasks of this worker are still running or queued it waits for their
//! announcements too, for at most `COALESCE_WAIT` and `ANNOUNCEMENTS_PER_FRAME_MAX`. When
//! nothing else is under way, the common case of a job that keeps up with its input, an
//! announcement goes out at once.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sleet_plan::StageId;
use sleet_wire::{BlockMeta, BlocksAnnounced, Connection, PartitionOwner, PeerRequest, Role, TaskId, WorkerId};
use tokio::sync::{mpsc, Notify};

use crate::error::WorkerError;

/// Bound on announcements queued towards one peer; a full queue slows the map side.
const PEER_QUEUE_LEN_MAX: usize = 4096;
/// Bound on the announcements one frame carries.
const ANNOUNCEMENTS_PER_FRAME_MAX: usize = 1024;
/// The longest an announcement waits for others while map tasks are still under way.
const COALESCE_WAIT: Duration = Duration::from_millis(1);

/// Where the next stage's partitions live, as the group launch said.
#[derive(Debug, Clone, PartialEq)]
pub struct Downstream {
    pub reduce_stage: StageId,
    /// Index = reduce partition.
    pub owners: Vec<PartitionOwner>,
}

pub struct Announcer {
    worker: WorkerId,
    address: String,
    local: mpsc::Sender<Vec<BlocksAnnounced>>,
    links: Mutex<HashMap<String, mpsc::Sender<BlocksAnnounced>>>,
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

impl Announcer {
    /// `local` is this worker's own announcement queue (its scheduler reads it).
    pub fn new(worker: WorkerId, address: String, local: mpsc::Sender<Vec<BlocksAnnounced>>) -> Self {
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
    ) -> Result<(), WorkerError> {
        for (address, (owner, metas)) in announcements_by_owner(downstream, blocks) {
            let message = BlocksAnnounced {
                map_task,
                reduce_stage: downstream.reduce_stage,
                holder: self.worker,
                holder_address: self.address.clone(),
                blocks: metas,
            };
            let sent = if address == self.address {
                self.local.send(vec![message]).await.is_ok()
            } else {
                self.link(address).send(message).await.is_ok()
            };
            if !sent {
                return Err(WorkerError::Announce { worker: owner, address: address.to_string() });
            }
        }
        Ok(())
    }

    /// The queue towards one peer, with a writer task that owns the connection. A link whose
    /// writer died is replaced, so a later announcement tries a fresh connection.
    fn link(&self, address: &str) -> mpsc::Sender<BlocksAnnounced> {
        let mut links = self.links.lock().expect("announcer links lock");
        if let Some(link) = links.get(address).filter(|link| !link.is_closed()) {
            return link.clone();
        }
        let (link, queue) = mpsc::channel(PEER_QUEUE_LEN_MAX);
        tokio::spawn(write_announcements(address.to_string(), queue, Arc::clone(&self.under_way)));
        links.insert(address.to_string(), link.clone());
        link
    }
}

/// Every reduce partition's entry (an empty one for partitions the map task wrote nothing
/// to), grouped by the address of the worker that owns it.
fn announcements_by_owner<'a>(
    downstream: &'a Downstream,
    blocks: &[BlockMeta],
) -> BTreeMap<&'a str, (WorkerId, Vec<BlockMeta>)> {
    let mut metas: Vec<BlockMeta> = (0..downstream.owners.len() as u32)
        .map(|reduce_partition| BlockMeta { reduce_partition, rows: 0, bytes: 0 })
        .collect();
    let reduce_partitions = metas.len();
    for block in blocks {
        let entry = metas
            .get_mut(block.reduce_partition as usize)
            .unwrap_or_else(|| panic!("block for reduce partition {} of {reduce_partitions}", block.reduce_partition));
        assert_eq!(entry.rows, 0, "two blocks for reduce partition {}", block.reduce_partition);
        *entry = *block;
    }
    let mut by_owner: BTreeMap<&str, (WorkerId, Vec<BlockMeta>)> = BTreeMap::new();
    for (owner, meta) in downstream.owners.iter().zip(metas) {
        by_owner.entry(owner.address.as_str()).or_insert_with(|| (owner.worker, Vec::new())).1.push(meta);
    }
    by_owner
}

/// Sends what is queued for one peer as one frame, after waiting (briefly) for the
/// announcements of map tasks still under way on this worker.
async fn write_announcements(
    address: String,
    mut queue: mpsc::Receiver<BlocksAnnounced>,
    under_way: Arc<MapTasksUnderWay>,
) {
    let result = async {
        let mut connection = Connection::connect(&address, Role::Peer).await?;
        while let Some(first) = queue.recv().await {
            let mut announcements = vec![first];
            let deadline = tokio::time::Instant::now() + COALESCE_WAIT;
            loop {
                while announcements.len() < ANNOUNCEMENTS_PER_FRAME_MAX {
                    match queue.try_recv() {
                        Ok(more) => announcements.push(more),
                        Err(_) => break,
                    }
                }
                if announcements.len() >= ANNOUNCEMENTS_PER_FRAME_MAX {
                    break;
                }
                // Registered before the count is read, so a task finishing in between wakes us.
                let none_left = under_way.none_left.notified();
                if under_way.count.load(Ordering::Acquire) == 0 {
                    break;
                }
                tokio::select! {
                    more = queue.recv() => match more {
                        Some(more) => announcements.push(more),
                        None => break,
                    },
                    _ = none_left => {}
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
            connection.send_binary(&PeerRequest::Announce(announcements)).await?;
        }
        Ok::<(), sleet_wire::WireError>(())
    }
    .await;
    if let Err(error) = result {
        eprintln!("sleet worker: announcing blocks to {address} failed ({error}); its reduce tasks cannot start");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(worker: WorkerId) -> PartitionOwner {
        PartitionOwner { worker, address: format!("w{worker}") }
    }

    #[test]
    fn every_partition_is_announced_to_its_owner_empty_ones_included() {
        let downstream = Downstream { reduce_stage: StageId(1), owners: vec![owner(1), owner(2), owner(1)] };
        let blocks = [BlockMeta { reduce_partition: 2, rows: 5, bytes: 80 }];
        let by_owner = announcements_by_owner(&downstream, &blocks);
        type PartitionRows = Vec<(u32, u64)>;
        let summary: Vec<(&str, WorkerId, PartitionRows)> = by_owner
            .into_iter()
            .map(|(address, (worker, metas))| {
                (address, worker, metas.iter().map(|meta| (meta.reduce_partition, meta.rows)).collect())
            })
            .collect();
        assert_eq!(summary, vec![("w1", 1, vec![(0, 0), (2, 5)]), ("w2", 2, vec![(1, 0)])]);
    }
}
