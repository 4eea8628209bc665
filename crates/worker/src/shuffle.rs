//! The shuffle service: every worker serves its block store to reducers on other workers,
//! takes in the block announcements map tasks push to it, and fetches the blocks its own
//! reducers need. Data moves worker to worker, never through the driver.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use sleet_wire::ipc::{decode_block, encode_block};
use sleet_wire::{BlockId, BlocksAnnounced, Connection, FetchedBlock, FrameKind, PeerRequest, Role};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::block_store::BlockStore;
use crate::error::WorkerError;

/// Idle connections kept per peer, so a fetch does not pay a connect and handshake each time.
const IDLE_CONNECTIONS_PER_PEER_MAX: usize = 16;

/// Serves peers until the listener fails; announcements go to `announced`.
pub async fn serve(listener: TcpListener, store: Arc<BlockStore>, announced: mpsc::Sender<Vec<BlocksAnnounced>>) {
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
    announced: mpsc::Sender<Vec<BlocksAnnounced>>,
) -> Result<(), WorkerError> {
    let mut connection = Connection::establish(stream, Role::Peer).await?;
    while let Some(frame) = connection.recv().await? {
        let blocks = match frame.binary::<PeerRequest>("peer request")? {
            PeerRequest::Fetch { blocks } => blocks,
            PeerRequest::Announce(announcements) => {
                if announced.send(announcements).await.is_err() {
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

#[derive(Default)]
pub struct ShuffleClient {
    idle: Mutex<HashMap<String, Vec<Connection>>>,
}

impl ShuffleClient {
    /// Pulls `blocks` from the worker at `address`; returns them and the bytes received.
    pub async fn fetch(&self, address: &str, blocks: &[BlockId]) -> Result<(Vec<RecordBatch>, u64), WorkerError> {
        let pooled = self.idle.lock().expect("shuffle pool lock").get_mut(address).and_then(Vec::pop);
        let mut connection = match pooled {
            Some(connection) => connection,
            None => Connection::connect(address, Role::Peer)
                .await
                .map_err(|source| WorkerError::Fetch { address: address.to_string(), source })?,
        };
        let result = Self::fetch_on(&mut connection, blocks).await;
        if result.is_ok() {
            let mut idle = self.idle.lock().expect("shuffle pool lock");
            let pool = idle.entry(address.to_string()).or_default();
            if pool.len() < IDLE_CONNECTIONS_PER_PEER_MAX {
                pool.push(connection);
            }
        }
        result.map_err(|error| match error {
            WorkerError::Wire(source) => WorkerError::Fetch { address: address.to_string(), source },
            other => other,
        })
    }

    async fn fetch_on(connection: &mut Connection, blocks: &[BlockId]) -> Result<(Vec<RecordBatch>, u64), WorkerError> {
        connection.send_binary(&PeerRequest::Fetch { blocks: blocks.to_vec() }).await?;
        let mut fetched = Vec::with_capacity(blocks.len());
        let mut bytes = 0u64;
        for expected in blocks {
            let frame = connection.recv().await?.ok_or(sleet_wire::WireError::Truncated)?;
            if frame.kind != FrameKind::Data {
                return Err(sleet_wire::WireError::UnexpectedFrame { expected: "data", found: "another kind" }.into());
            }
            bytes += frame.payload.len() as u64;
            let (header, body): (FetchedBlock, &[u8]) = frame.data("fetched block")?;
            match header {
                FetchedBlock::Found { block, rows } if block == *expected => {
                    let batch = decode_block(body)?;
                    assert_eq!(batch.num_rows() as u64, rows, "block {block:?} arrived with a different row count");
                    fetched.push(batch);
                }
                FetchedBlock::Found { block, .. } => {
                    return Err(WorkerError::Internal(format!("asked for block {expected:?}, got {block:?}")))
                }
                FetchedBlock::Missing { block } => return Err(WorkerError::MissingBlock(block)),
            }
        }
        Ok((fetched, bytes))
    }
}
