//! Errors of the wire: a peer speaking another protocol, a damaged stream, a closed socket.

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The peer runs another sleet version: upgrading one side is the fix, not a retry.
    #[error("protocol version mismatch: we speak {ours}, the peer speaks {theirs}")]
    VersionMismatch { ours: u16, theirs: u16 },
    #[error("the peer is not a sleet process (bad magic {0:?})")]
    BadMagic([u8; 4]),
    #[error("frame of {length} bytes exceeds the limit of {limit} bytes")]
    FrameTooLarge { length: u64, limit: u64 },
    #[error("unknown frame kind {0}")]
    UnknownFrameKind(u8),
    #[error("connection closed in the middle of a frame")]
    Truncated,
    #[error("unexpected {found} frame where {expected} was expected")]
    UnexpectedFrame { expected: &'static str, found: &'static str },
    #[error("malformed {what} message")]
    Malformed {
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("data block is malformed: {0}")]
    BadBlock(String),
    /// A bug in the sender: plans name only the types a block carries. The type as Arrow
    /// prints it (`sleet-block` encodes blocks; the wire itself links no Arrow).
    #[error("column {column:?} has type {data_type}, which a data block cannot carry")]
    UnsupportedColumnType { column: String, data_type: String },
    #[error("data block cannot carry {what} {length}: the limit is {limit}")]
    BlockTooLarge { what: &'static str, length: u64, limit: u64 },
    /// The cluster secret was not proven, one way or the other; the reason says which.
    #[error("authentication failed: {0}")]
    Unauthenticated(String),
    /// TLS was asked for and could not be set up; the reason names the file or the peer.
    #[error("TLS: {0}")]
    Tls(String),
    /// The socket failed; reconnecting may help.
    #[error("connection failed")]
    Io(#[source] std::io::Error),
}

impl From<std::io::Error> for WireError {
    fn from(error: std::io::Error) -> Self {
        if error.kind() == std::io::ErrorKind::UnexpectedEof {
            WireError::Truncated
        } else {
            WireError::Io(error)
        }
    }
}

/// An error and its causes on one line, so a report sent to another process tells the whole story.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
