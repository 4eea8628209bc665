//! The shuffle service: every worker serves its block store to reducers on other workers,
//! takes in the block announcements map tasks push to it, and fetches the blocks its own
//! reducers need. Data moves worker to worker, never through the driver.

use rustc_hash::FxHashMap as HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use sleet_block::{decode_block, encode_block};
use sleet_wire::{BlockId, BlocksAnnounced, Connection, FetchedBlock, FrameKind, PeerRequest, Role};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use crate::block_store::BlockStore;
use crate::error::WorkerError;

/// Serves peers until the listener fails; announcements go to `announced`.
pub async fn serve(listener: TcpListener, store: Arc<BlockStore>, announced: mpsc::Sender<BlocksAnnounced>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let (store, announced) = (Arc::clone(&store), announced.clone());
        tokio::spawn(async move {
            if let Err(error) = serve_peer(stream, store, announced).await {
                eprintln!("sleet worker: shuffle peer connection closed: {error}");
            }
        });
    }
}

async fn serve_peer(
    stream: tokio::net::TcpStream,
    store: Arc<BlockStore>,
    announced: mpsc::Sender<BlocksAnnounced>,
) -> Result<(), WorkerError> {
    let mut connection = Connection::establish(stream, Role::Peer).await?;
    while let Some(frame) = connection.recv().await? {
        let blocks = match frame.binary::<PeerRequest>("peer request")? {
            PeerRequest::Fetch { blocks } => blocks,
            PeerRequest::Announce(announcement) => {
                if announced.send(announcement).await.is_err() {
                    return Ok(());
                }
                continue;
            }
        };
        for id in blocks {
            match store.take(&id) {
                Some(block) => {
                    let rows = block.num_rows() as u64;
                    let body = encode_block(&block)?;
                    sleet_wire::write_data(&mut connection.writer, &FetchedBlock::Found { block: id, rows }, &body)
                        .await?;
                }
                None => {
                    sleet_wire::write_data(&mut connection.writer, &FetchedBlock::Missing { block: id }, &[]).await?
                }
            }
        }
        connection.writer.flush().await?;
    }
    Ok(())
}

/// Fetches queued for one holder while a round trip to it is under way travel together in
/// the next one, up to this many.
const FETCHES_PER_ROUND_MAX: usize = 256;
/// Bound on fetches queued towards one holder; a full queue makes the reducer wait.
const PEER_FETCH_QUEUE_LEN_MAX: usize = 1024;

/// What one fetch yields: its blocks in the order asked for, and the bytes received for them.
type Fetched = Result<(Vec<RecordBatch>, u64), WorkerError>;

struct FetchRequest {
    blocks: Vec<BlockId>,
    reply: oneshot::Sender<Fetched>,
}

/// Pulls blocks for this worker's reduce tasks, one connection and one round trip at a time
/// per holder.
///
/// On a loopback cluster a round trip costs a few syscalls and two process wake-ups at each
/// end, far more than a small block's bytes. Reduce tasks of several batches often become
/// ready together (announcements arrive coalesced), and each asks the same holders, so one
/// request naming all their blocks replaces many. Nothing waits on purpose: the first fetch
/// to an idle holder goes out at once; only fetches arriving while it is in flight are
/// gathered for the next round.
#[derive(Default)]
pub struct ShuffleClient {
    peers: Mutex<HashMap<String, mpsc::Sender<FetchRequest>>>,
}

impl ShuffleClient {
    /// Pulls `blocks` from the worker at `address`; returns them and the bytes received.
    pub async fn fetch(&self, address: &str, blocks: Vec<BlockId>) -> Fetched {
        let (reply, answer) = oneshot::channel();
        let stopped =
            || WorkerError::Fetch { address: address.to_string(), source: Arc::new(sleet_wire::WireError::Truncated) };
        if self.peer(address).send(FetchRequest { blocks, reply }).await.is_err() {
            return Err(stopped());
        }
        answer.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// The queue towards one holder, with the task that owns its connection. A queue whose
    /// task ended is replaced, so a later fetch tries afresh.
    fn peer(&self, address: &str) -> mpsc::Sender<FetchRequest> {
        let mut peers = self.peers.lock().expect("shuffle peers lock");
        if let Some(queue) = peers.get(address).filter(|queue| !queue.is_closed()) {
            return queue.clone();
        }
        let (queue, requests) = mpsc::channel(PEER_FETCH_QUEUE_LEN_MAX);
        tokio::spawn(fetch_from_holder(address.to_string(), requests));
        peers.insert(address.to_string(), queue.clone());
        queue
    }
}

/// Serves the fetches towards one holder in rounds. A round that fails on the wire fails
/// every fetch in it and drops the connection; the next round connects again.
async fn fetch_from_holder(address: String, mut requests: mpsc::Receiver<FetchRequest>) {
    let mut connection: Option<Connection> = None;
    while let Some(first) = requests.recv().await {
        let mut round = vec![first];
        while round.len() < FETCHES_PER_ROUND_MAX {
            match requests.try_recv() {
                Ok(request) => round.push(request),
                Err(_) => break,
            }
        }
        let outcome = async {
            let live = match connection.take() {
                Some(live) => live,
                None => Connection::connect(&address, Role::Peer).await?,
            };
            let connection = connection.insert(live);
            round_trip(connection, &address, &round).await
        }
        .await;
        match outcome {
            Ok(results) => {
                for (request, result) in round.into_iter().zip(results) {
                    let _ = request.reply.send(result);
                }
            }
            Err(error) => {
                connection = None;
                let source = Arc::new(error);
                for request in round {
                    let _ = request
                        .reply
                        .send(Err(WorkerError::Fetch { address: address.clone(), source: Arc::clone(&source) }));
                }
            }
        }
    }
}

/// One request naming every block of the round, then one data frame per block, in order. A
/// missing or undecodable block fails only the fetch that asked for it; a frame out of step
/// with the request fails the round, since the connection can no longer be trusted.
async fn round_trip(
    connection: &mut Connection,
    address: &str,
    round: &[FetchRequest],
) -> Result<Vec<Fetched>, sleet_wire::WireError> {
    let all_blocks: Vec<BlockId> = round.iter().flat_map(|request| request.blocks.iter().copied()).collect();
    connection.send_binary(&PeerRequest::Fetch { blocks: all_blocks }).await?;
    let mut results = Vec::with_capacity(round.len());
    for request in round {
        let mut fetched = Ok((Vec::with_capacity(request.blocks.len()), 0u64));
        for expected in &request.blocks {
            let frame = connection.recv().await?.ok_or(sleet_wire::WireError::Truncated)?;
            if frame.kind != FrameKind::Data {
                return Err(sleet_wire::WireError::UnexpectedFrame { expected: "data", found: "another kind" });
            }
            let payload_bytes = frame.payload.len() as u64;
            let (header, body): (FetchedBlock, &[u8]) = frame.data("fetched block")?;
            let block = match header {
                FetchedBlock::Found { block, rows } if block == *expected => decode_block(body)
                    .map_err(|source| WorkerError::Fetch { address: address.to_string(), source: Arc::new(source) })
                    .and_then(|batch| {
                        if batch.num_rows() as u64 == rows {
                            Ok(batch)
                        } else {
                            Err(WorkerError::Internal(format!(
                                "block {block:?} arrived with {} rows, its header says {rows}",
                                batch.num_rows()
                            )))
                        }
                    }),
                FetchedBlock::Missing { block } if block == *expected => Err(WorkerError::MissingBlock(block)),
                FetchedBlock::Found { block, .. } | FetchedBlock::Missing { block } => {
                    return Err(sleet_wire::WireError::BadBlock(format!(
                        "asked for block {expected:?}, the holder answered with {block:?}"
                    )))
                }
            };
            if let Ok((batches, bytes)) = &mut fetched {
                match block {
                    Ok(batch) => {
                        batches.push(batch);
                        *bytes += payload_bytes;
                    }
                    Err(error) => fetched = Err(error),
                }
            }
        }
        results.push(fetched);
    }
    Ok(results)
}
