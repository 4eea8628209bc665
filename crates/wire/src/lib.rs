//! Every message between sleet processes, and the framing that carries them over TCP.
//!
//! ```text
//!  worker ──Register / Status (batched)──▶ driver ◀──Submit / Stop── client (sleet submit, bench)
//!  worker ◀─RegisterJob / LaunchGroup──── driver ──Progress / Finished──▶ client
//!         ◀─(bsp) LaunchTask
//!  worker ──Announce (block metadata)──▶ worker (peer)
//!  worker ──Fetch──▶ worker (peer) ──Data frames (columnar blocks)──▶ worker
//! ```
//!
//! Every connection starts with a `Hello` each way (magic, protocol version, role, and a nonce
//! when the cluster has a secret, which both sides then prove: `auth`); after
//! that, frames are `[u32 length][u8 kind][payload]`. Client payloads are JSON (serde); driver,
//! worker and peer payloads are binary (postcard); data payloads are a binary header followed
//! by one block in the columnar format of `sleet-block`.

pub mod auth;
pub mod clock;
pub mod error;
pub mod frame;
pub mod json_text;
pub mod message;
mod outcome_codec;
mod report_codec;
pub mod tls;

pub use error::{error_chain, WireError};
pub use frame::{
    decode_binary, encode_binary, handshake, handshake_with, read_frame, write_binary, write_control, write_data,
    write_frame, Connection, Frame, FrameKind, ReadStream, Role, WriteStream, MAX_FRAME_BYTES, PROTOCOL_VERSION,
};
pub use message::*;
pub use report_codec::{encode_status, EncodedReport};
