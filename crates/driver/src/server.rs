//! The driver's network edge: accepts connections, tells workers from clients by their
//! handshake role, and turns frames into `DriverEvent`s for the coordinator.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use sleet_wire::{ClientRequest, Connection, DriverToClient, DriverToWorker, Role, WorkerId, WorkerToDriver};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::event::{ClientId, DriverEvent};
use crate::liveness::{HeartbeatSettings, Liveness};
use crate::membership::{EncodedMessage, WorkerHandle};

/// Bound on messages queued towards one connection.
const OUTBOX_LEN_MAX: usize = 4096;

pub async fn accept_loop(
    listener: TcpListener,
    events: mpsc::Sender<DriverEvent>,
    liveness: Arc<Liveness>,
    heartbeats: HeartbeatSettings,
    incarnation: u64,
) {
    let next_worker = Arc::new(AtomicU32::new(1));
    let next_client = Arc::new(AtomicU64::new(1));
    loop {
        let Ok((stream, peer)) = listener.accept().await else { continue };
        let events = events.clone();
        let (next_worker, next_client) = (Arc::clone(&next_worker), Arc::clone(&next_client));
        let liveness = Arc::clone(&liveness);
        tokio::spawn(async move {
            let connection = match Connection::establish(stream, Role::Driver).await {
                Ok(connection) => connection,
                Err(error) => {
                    eprintln!("sleet driver: rejected a connection from {peer}: {error}");
                    return;
                }
            };
            match connection.peer_role {
                Role::Worker => {
                    // Ids are never reused: a lost worker that comes back is a new member.
                    let id = next_worker.fetch_add(1, Ordering::Relaxed);
                    serve_worker(connection, id, events, liveness, heartbeats, incarnation).await
                }
                Role::Heartbeat => serve_heartbeats(connection, liveness).await,
                Role::Client => serve_client(connection, next_client.fetch_add(1, Ordering::Relaxed), events).await,
                other => eprintln!("sleet driver: {peer} connected as {other:?}, which the driver does not serve"),
            }
        });
    }
}

async fn serve_worker(
    connection: Connection,
    id: WorkerId,
    events: mpsc::Sender<DriverEvent>,
    liveness: Arc<Liveness>,
    heartbeats: HeartbeatSettings,
    incarnation: u64,
) {
    let (mut reader, mut writer) = connection.into_split();
    let register = match sleet_wire::read_frame(&mut reader, sleet_wire::MAX_FRAME_BYTES).await {
        Ok(Some(frame)) => frame.binary::<WorkerToDriver>("worker registration"),
        Ok(None) => return,
        Err(error) => Err(error),
    };
    let Ok(WorkerToDriver::Register { name, shuffle_address, cores, pid, previous_driver }) = register else {
        eprintln!("sleet driver: a worker connected without registering; closing it");
        return;
    };
    if previous_driver == Some(incarnation) {
        // This driver cut it off (declared lost, fenced): it must not come back as if the
        // driver had restarted. Closing without a welcome tells it to exit.
        eprintln!("sleet driver: refused {name} (pid {pid}): this driver declared it lost");
        return;
    }
    let welcome = DriverToWorker::Welcome {
        worker: id,
        heartbeat_interval_ms: heartbeats.interval.as_millis().max(1) as u64,
        driver_incarnation: incarnation,
    };
    if sleet_wire::write_binary(&mut writer, &welcome).await.is_err() || writer.flush().await.is_err() {
        return;
    }
    let fence = liveness.watch(id);
    let (outbox, mut outbox_rx) = mpsc::channel::<EncodedMessage>(OUTBOX_LEN_MAX);
    let writer_task = tokio::spawn(async move {
        while let Some(EncodedMessage(payload)) = outbox_rx.recv().await {
            if sleet_wire::write_frame(&mut writer, sleet_wire::FrameKind::Binary, &payload).await.is_err() {
                return;
            }
            if outbox_rx.is_empty() && writer.flush().await.is_err() {
                return;
            }
        }
    });
    eprintln!("sleet driver: worker {id} joined ({name}, pid {pid}, {cores} cores, shuffle on {shuffle_address})");
    let handle = WorkerHandle { id, name, shuffle_address, cores, pid, outbox };
    if events.send(DriverEvent::WorkerJoined(handle)).await.is_err() {
        return;
    }
    let reason = loop {
        let frame = tokio::select! {
            frame = sleet_wire::read_frame(&mut reader, sleet_wire::MAX_FRAME_BYTES) => frame,
            // Declared lost (silent too long): nothing it sends from now on counts.
            () = fence.notified() => break None,
        };
        match frame {
            Ok(Some(frame)) => match timed(|| frame.binary::<WorkerToDriver>("worker message")) {
                (Ok(message), decode_us) => {
                    if events.send(DriverEvent::FromWorker { worker: id, message, decode_us }).await.is_err() {
                        break None;
                    }
                }
                (Err(error), _) => break Some(format!("sent a malformed message ({error})")),
            },
            Ok(None) => break Some("its connection closed".to_string()),
            Err(error) => break Some(format!("its connection failed ({error})")),
        }
    };
    // Both halves dropped: the socket closes, and a frozen worker that wakes up reads the
    // end of its connection and exits instead of going on with work reassigned to others.
    writer_task.abort();
    drop(reader);
    if let Some(reason) = reason {
        if liveness.fence(id) {
            let _ = events.send(DriverEvent::WorkerLost { worker: id, reason }).await;
        }
    }
}

/// A worker's heartbeat connection: every frame is a beat. Closed once the worker is fenced,
/// so it cannot keep looking alive.
async fn serve_heartbeats(connection: Connection, liveness: Arc<Liveness>) {
    let (mut reader, _writer) = connection.into_split();
    while let Ok(Some(frame)) = sleet_wire::read_frame(&mut reader, sleet_wire::MAX_FRAME_BYTES).await {
        let Ok(WorkerToDriver::Heartbeat { worker }) = frame.binary::<WorkerToDriver>("heartbeat") else {
            eprintln!("sleet driver: a heartbeat connection sent something else; closing it");
            return;
        };
        if !liveness.beat(worker) {
            return;
        }
    }
}

fn timed<T>(work: impl FnOnce() -> T) -> (T, i64) {
    let started_us = sleet_wire::clock::now_us();
    let value = work();
    (value, sleet_wire::clock::now_us() - started_us)
}

async fn serve_client(connection: Connection, client: ClientId, events: mpsc::Sender<DriverEvent>) {
    let (mut reader, mut writer) = connection.into_split();
    let (replies, mut replies_rx) = mpsc::channel::<DriverToClient>(OUTBOX_LEN_MAX);
    tokio::spawn(async move {
        while let Some(message) = replies_rx.recv().await {
            if sleet_wire::write_control(&mut writer, &message).await.is_err() || writer.flush().await.is_err() {
                return;
            }
        }
    });
    loop {
        let request = match sleet_wire::read_frame(&mut reader, sleet_wire::MAX_FRAME_BYTES).await {
            Ok(Some(frame)) => frame.control::<ClientRequest>("client request"),
            Ok(None) => break,
            Err(error) => Err(error),
        };
        let event = match request {
            Ok(ClientRequest::Submit(job)) => DriverEvent::Submit { client, job, replies: replies.clone() },
            Ok(ClientRequest::Stop { job }) => DriverEvent::Stop { job },
            Ok(ClientRequest::Attach { job }) => DriverEvent::Attach { job, replies: replies.clone() },
            Ok(ClientRequest::Shutdown) => DriverEvent::Shutdown,
            Err(error) => {
                let _ = replies.send(DriverToClient::Rejected { reason: format!("malformed request: {error}") }).await;
                break;
            }
        };
        if events.send(event).await.is_err() {
            return;
        }
    }
    let _ = events.send(DriverEvent::ClientGone { client }).await;
}
