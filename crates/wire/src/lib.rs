//! Every message between sleet processes, and the framing that carries them over TCP.
//!
//! ```text
//!  worker ──Register / TaskFinished──▶ driver ◀──Submit / Stop── client (sleet submit, bench)
//!  worker ◀─RegisterJob / LaunchTask── driver ──Progress / Finished──▶ client
//!  worker ──FetchBlocks──▶ worker (peer) ──Data frames (Arrow IPC)──▶ worker
//! ```
//!
//! Every connection starts with a `Hello` each way (magic, protocol version, role); after
//! that, frames are `[u32 length][u8 kind][payload]`. Control payloads are JSON (serde);
//! data payloads are a JSON header followed by Arrow IPC stream bytes.

pub mod clock;
pub mod error;
pub mod frame;
pub mod ipc;
pub mod message;

pub use error::{error_chain, WireError};
pub use frame::{
    handshake, read_frame, write_control, write_data, write_frame, Connection, Frame, FrameKind, Role, MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
};
pub use message::*;
