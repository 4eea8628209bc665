//! The frame codec and the payloads it carries, from bytes a peer could send.
//!
//! Input: a byte stream as read from a connection. Frames are read from it until the stream
//! ends or a read fails; each frame is decoded as every message its kind carries (control:
//! client and driver JSON; binary: the postcard messages between sleet processes; data: a
//! fetched block's header and its block). Checked: no panic, no allocation the input does
//! not pay for, and every frame read is re-encoded to exactly the bytes it was read from.
//! The handshake is run over the same bytes too, with and without a cluster secret.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
// Links the allocation cap (see src/lib.rs).
use sleet_fuzz as _;
use sleet_block::{decode_block, encode_block};
use sleet_wire::{
    auth::Secret, handshake, handshake_with, read_frame, write_frame, ClientRequest, DriverToClient, DriverToWorker, FetchedBlock, FrameKind,
    PeerRequest, Role, WorkerToDriver, MAX_FRAME_BYTES,
};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| tokio::runtime::Builder::new_current_thread().build().expect("a runtime"))
}

fn secret() -> &'static Secret {
    static SECRET: OnceLock<Secret> = OnceLock::new();
    SECRET.get_or_init(|| Secret::new("a fuzzing cluster's secret").expect("long enough"))
}

fuzz_target!(|data: &[u8]| {
    runtime().block_on(async {
        let mut reader = data;
        loop {
            let before = reader;
            let frame = match read_frame(&mut reader, MAX_FRAME_BYTES).await {
                Ok(Some(frame)) => frame,
                Ok(None) | Err(_) => break,
            };
            let consumed = before.len() - reader.len();
            let mut encoded = Vec::new();
            write_frame(&mut encoded, frame.kind, &frame.payload).await.expect("a frame read back fits");
            assert_eq!(encoded, before[..consumed], "a frame re-encodes to the bytes it was read from");
            match frame.kind {
                FrameKind::Hello | FrameKind::Proof => {}
                FrameKind::Control => {
                    let _ = frame.control::<ClientRequest>("fuzz");
                    let _ = frame.control::<DriverToClient>("fuzz");
                }
                FrameKind::Binary => {
                    let _ = frame.binary::<WorkerToDriver>("fuzz");
                    let _ = frame.binary::<DriverToWorker>("fuzz");
                    let _ = frame.binary::<PeerRequest>("fuzz");
                }
                FrameKind::Data => {
                    if let Ok((_header, body)) = frame.data::<FetchedBlock>("fuzz") {
                        if let Ok(block) = decode_block(body) {
                            // The codec is canonical: what decodes re-encodes to the same bytes.
                            assert_eq!(encode_block(&block).expect("a decoded block encodes"), body);
                        }
                    }
                }
            }
        }

        // The handshake reads the peer's hello from these bytes (and writes ours to a sink),
        // without a secret and with one (then its proof and verdict come from them too).
        let mut stream = tokio::io::join(data, tokio::io::sink());
        let _ = handshake(&mut stream, Role::Worker).await;
        let mut stream = tokio::io::join(data, tokio::io::sink());
        let _ = handshake_with(&mut stream, Role::Worker, Some(secret())).await;
    });
});
