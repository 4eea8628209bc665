//! The frame codec and the version handshake.
//!
//! A frame is `[u32 big-endian length][u8 kind][payload]`, where `length` counts the kind
//! byte and the payload. The length is checked against `MAX_FRAME_BYTES` *before* any
//! buffer is allocated, so a corrupt or hostile length cannot exhaust memory.
//!
//! Payloads come in two encodings. Messages between sleet processes are `Binary` (postcard:
//! compact, and several times cheaper to encode and decode than JSON, which matters because
//! a status message carries one report per task). Messages with clients are `Control` (JSON),
//! whose job files users read and write. Data frames carry a binary header and a block (`sleet-block`).

use serde::{de::DeserializeOwned, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpStream;

use crate::auth::{self, Secret};
use crate::error::WireError;
use crate::tls;

/// Bumped on any incompatible change to frames or messages.
pub const PROTOCOL_VERSION: u16 = 9;
/// Large enough for a shuffle block of a few million rows; anything bigger is a bug or an attack.
pub const MAX_FRAME_BYTES: u32 = 256 * 1024 * 1024;
const MAGIC: [u8; 4] = *b"SLET";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    Hello = 1,
    Control = 2,
    Data = 3,
    Binary = 4,
    /// A handshake's proof of the cluster secret, or its verdict.
    Proof = 5,
}

impl FrameKind {
    fn from_byte(byte: u8) -> Result<Self, WireError> {
        match byte {
            1 => Ok(FrameKind::Hello),
            2 => Ok(FrameKind::Control),
            3 => Ok(FrameKind::Data),
            4 => Ok(FrameKind::Binary),
            5 => Ok(FrameKind::Proof),
            other => Err(WireError::UnknownFrameKind(other)),
        }
    }

    fn name(self) -> &'static str {
        match self {
            FrameKind::Hello => "hello",
            FrameKind::Control => "control",
            FrameKind::Data => "data",
            FrameKind::Binary => "binary",
            FrameKind::Proof => "proof",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: FrameKind,
    pub payload: Vec<u8>,
}

impl Frame {
    /// Decodes a control frame's JSON payload into `T`.
    pub fn control<T: DeserializeOwned>(&self, what: &'static str) -> Result<T, WireError> {
        if self.kind != FrameKind::Control {
            return Err(WireError::UnexpectedFrame { expected: "control", found: self.kind.name() });
        }
        serde_json::from_slice(&self.payload).map_err(|source| WireError::Malformed { what, source: source.into() })
    }

    /// Decodes a binary frame's payload into `T`.
    pub fn binary<T: DeserializeOwned>(&self, what: &'static str) -> Result<T, WireError> {
        if self.kind != FrameKind::Binary {
            return Err(WireError::UnexpectedFrame { expected: "binary", found: self.kind.name() });
        }
        decode_binary(&self.payload, what)
    }

    /// Splits a data frame into its binary header (decoded as `T`) and its body bytes.
    pub fn data<T: DeserializeOwned>(&self, what: &'static str) -> Result<(T, &[u8]), WireError> {
        if self.kind != FrameKind::Data {
            return Err(WireError::UnexpectedFrame { expected: "data", found: self.kind.name() });
        }
        let truncated = || WireError::Malformed { what, source: "data frame shorter than its header length".into() };
        let header_length = self.payload.get(..4).ok_or_else(truncated)?;
        let header_length = u32::from_be_bytes(header_length.try_into().expect("4 bytes")) as usize;
        let header = self.payload.get(4..4 + header_length).ok_or_else(truncated)?;
        let header = decode_binary(header, what)?;
        Ok((header, &self.payload[4 + header_length..]))
    }
}

/// Who is on the other end of a connection; the driver routes by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Driver = 1,
    Worker = 2,
    Client = 3,
    /// A worker fetching shuffle blocks from another worker.
    Peer = 4,
    /// A worker's heartbeats: a connection of their own, written by a thread of their own,
    /// so that neither task work on a busy core nor a full outbox can delay them.
    Heartbeat = 5,
}

impl Role {
    fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(Role::Driver),
            2 => Some(Role::Worker),
            3 => Some(Role::Client),
            4 => Some(Role::Peer),
            5 => Some(Role::Heartbeat),
            _ => None,
        }
    }
}

pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    kind: FrameKind,
    payload: &[u8],
) -> Result<(), WireError> {
    let length = payload.len() as u64 + 1;
    if length > MAX_FRAME_BYTES as u64 {
        return Err(WireError::FrameTooLarge { length, limit: MAX_FRAME_BYTES as u64 });
    }
    let mut small = [0u8; SMALL_FRAME_BYTES];
    small[..4].copy_from_slice(&(length as u32).to_be_bytes());
    small[4] = kind as u8;
    // A small frame goes out in one write, so an unbuffered stream sends one segment: a TLS
    // peer reading a plain hello refuses its first bytes and closes, and a hello written in
    // pieces met the closed socket (a broken pipe) instead of the alert that says why.
    if let Some(room) = small.get_mut(5..5 + payload.len()) {
        room.copy_from_slice(payload);
        writer.write_all(&small[..5 + payload.len()]).await?;
    } else {
        writer.write_all(&small[..5]).await?;
        writer.write_all(payload).await?;
    }
    Ok(())
}

/// Frames up to this size, header included, are written with one call.
const SMALL_FRAME_BYTES: usize = 128;

/// Reads one frame. `Ok(None)` means the peer closed the connection cleanly between frames.
pub async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R, limit: u32) -> Result<Option<Frame>, WireError> {
    let mut length_bytes = [0u8; 4];
    let mut filled = 0;
    while filled < 4 {
        let read = reader.read(&mut length_bytes[filled..]).await?;
        if read == 0 {
            return if filled == 0 { Ok(None) } else { Err(WireError::Truncated) };
        }
        filled += read;
    }
    let length = u32::from_be_bytes(length_bytes);
    if length > limit {
        return Err(WireError::FrameTooLarge { length: length as u64, limit: limit as u64 });
    }
    if length == 0 {
        return Err(WireError::Truncated);
    }
    let mut kind = [0u8; 1];
    reader.read_exact(&mut kind).await?;
    let kind = FrameKind::from_byte(kind[0])?;
    let mut payload = vec![0u8; length as usize - 1];
    reader.read_exact(&mut payload).await?;
    Ok(Some(Frame { kind, payload }))
}

pub async fn write_control<W: AsyncWrite + Unpin, T: Serialize>(writer: &mut W, message: &T) -> Result<(), WireError> {
    let payload = serde_json::to_vec(message).expect("control messages always serialize");
    write_frame(writer, FrameKind::Control, &payload).await
}

/// The binary encoding of a message between sleet processes.
pub fn encode_binary<T: Serialize>(message: &T) -> Vec<u8> {
    encode_binary_onto(message, Vec::with_capacity(ENCODE_CAPACITY_INITIAL))
}

/// Appends the binary encoding of `value` to `out`.
pub(crate) fn encode_binary_onto<T: Serialize + ?Sized>(value: &T, out: Vec<u8>) -> Vec<u8> {
    postcard::serialize_with_flavor(value, ByteVec(out)).expect("messages always serialize")
}

/// Room for a launch or a few reports before the buffer has to grow.
const ENCODE_CAPACITY_INITIAL: usize = 256;

/// postcard's output to a `Vec`, minus a library call per value.
///
/// postcard hands every varint to its output as a slice of 1 to 10 bytes; its own `Vec`
/// output copies each with `extend_from_slice`, a `memcpy` call whose set-up outweighs the
/// copy at that size. A status message is mostly such varints (task ids, timestamps), and
/// encoding it was the largest single cost of a worker's status path.
struct ByteVec(Vec<u8>);

/// Slices up to this long are pushed byte by byte: every varint fits.
const BYTEWISE_LEN_MAX: usize = 16;

impl postcard::ser_flavors::Flavor for ByteVec {
    type Output = Vec<u8>;

    #[inline]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        if data.len() <= BYTEWISE_LEN_MAX {
            self.0.reserve(data.len());
            for &byte in data {
                self.0.push(byte);
            }
        } else {
            self.0.extend_from_slice(data);
        }
        Ok(())
    }

    #[inline]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<Vec<u8>> {
        Ok(self.0)
    }
}

pub fn decode_binary<T: DeserializeOwned>(payload: &[u8], what: &'static str) -> Result<T, WireError> {
    postcard::from_bytes(payload).map_err(|source| WireError::Malformed { what, source: source.into() })
}

pub async fn write_binary<W: AsyncWrite + Unpin, T: Serialize>(writer: &mut W, message: &T) -> Result<(), WireError> {
    write_frame(writer, FrameKind::Binary, &encode_binary(message)).await
}

pub async fn write_data<W: AsyncWrite + Unpin, T: Serialize>(
    writer: &mut W,
    header: &T,
    body: &[u8],
) -> Result<(), WireError> {
    let header = encode_binary(header);
    let mut payload = Vec::with_capacity(4 + header.len() + body.len());
    payload.extend_from_slice(&(header.len() as u32).to_be_bytes());
    payload.extend_from_slice(&header);
    payload.extend_from_slice(body);
    write_frame(writer, FrameKind::Data, &payload).await
}

/// Sends our hello and checks the peer's: same magic, same version, and the process's
/// cluster secret proven both ways when it has one (`auth`). Returns the peer's role.
pub async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, role: Role) -> Result<Role, WireError> {
    handshake_with(stream, role, auth::process_secret()).await
}

/// `handshake` with `secret` instead of the process's.
pub async fn handshake_with<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    role: Role,
    secret: Option<&Secret>,
) -> Result<Role, WireError> {
    let mine = secret.map(|_| auth::nonce());
    let mut hello = Vec::with_capacity(8 + auth::NONCE_BYTES);
    hello.extend_from_slice(&MAGIC);
    hello.extend_from_slice(&PROTOCOL_VERSION.to_be_bytes());
    hello.push(role as u8);
    hello.push(u8::from(mine.is_some()));
    hello.extend_from_slice(mine.as_ref().map_or(&[][..], |nonce| &nonce[..]));
    write_frame(stream, FrameKind::Hello, &hello).await.map_err(closed_during_hello)?;
    stream.flush().await.map_err(|error| closed_during_hello(error.into()))?;
    let frame = read_frame(stream, 64).await.map_err(tls_instead_of_hello)?.ok_or(WireError::Truncated)?;
    if frame.kind != FrameKind::Hello {
        return Err(WireError::UnexpectedFrame { expected: "hello", found: frame.kind.name() });
    }
    let payload = &frame.payload;
    if payload.len() < 4 || payload[..4] != MAGIC {
        let mut magic = [0u8; 4];
        let shown = payload.len().min(4);
        magic[..shown].copy_from_slice(&payload[..shown]);
        return Err(WireError::BadMagic(magic));
    }
    if payload.len() < 6 {
        return Err(WireError::Truncated);
    }
    // The version first: an older peer's hello is shorter, and that is what to tell the user.
    let theirs = u16::from_be_bytes([payload[4], payload[5]]);
    if theirs != PROTOCOL_VERSION {
        return Err(WireError::VersionMismatch { ours: PROTOCOL_VERSION, theirs });
    }
    let (peer_role, peer_nonce) = match payload[6..] {
        [role, 0] => (role, None),
        [role, 1, ref nonce @ ..] if nonce.len() == auth::NONCE_BYTES => {
            (role, Some(<auth::Nonce>::try_from(nonce).expect("length checked")))
        }
        _ => return Err(WireError::Truncated),
    };
    let peer = Role::from_byte(peer_role).ok_or(WireError::UnknownFrameKind(peer_role))?;
    match (secret.zip(mine), peer_nonce) {
        (None, None) => Ok(peer),
        (Some(_), None) => Err(WireError::Unauthenticated(format!(
            "the peer ({peer:?}) proves no cluster secret, and this process requires one: start it with the same \
             --secret-file or {}",
            auth::SECRET_ENV
        ))),
        (None, Some(_)) => Err(WireError::Unauthenticated(format!(
            "the peer ({peer:?}) requires a cluster secret, and this process has none: give it --secret-file or {}",
            auth::SECRET_ENV
        ))),
        (Some((secret, mine)), Some(theirs)) => prove(stream, secret, role, peer, &mine, &theirs).await.map(|()| peer),
    }
}

/// The peer closed while this process was still saying hello: most likely it refused what it
/// read first, as a TLS peer refuses a plain hello.
fn closed_during_hello(error: WireError) -> WireError {
    match error {
        WireError::Io(error)
            if matches!(error.kind(), std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset) =>
        {
            WireError::Tls(format!(
                "the peer closed the connection during the handshake ({error}); if the peer speaks TLS and this \
                 process does not, {TLS_HINT}"
            ))
        }
        other => other,
    }
}

/// What a process without TLS needs to join a cluster that runs in it.
const TLS_HINT: &str = "give it the cluster's --tls-ca (or SLEET_TLS_CA)";

/// A TLS record where a hello should be (its content type 20–23 and major version 3 read as a
/// frame's length): the peer runs the cluster in TLS and this process does not.
fn tls_instead_of_hello(error: WireError) -> WireError {
    match error {
        WireError::FrameTooLarge { length, .. }
            if (20..=23).contains(&(length >> 24)) && (length >> 16) & 0xff == 3 =>
        {
            WireError::Tls(format!("the peer speaks TLS and this process does not: {TLS_HINT}"))
        }
        other => other,
    }
}

/// Both proofs, then both verdicts: each side sends before it reads, so neither waits on the
/// other, and each learns whether the other accepted it.
async fn prove<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    secret: &Secret,
    role: Role,
    peer: Role,
    mine: &auth::Nonce,
    theirs: &auth::Nonce,
) -> Result<(), WireError> {
    write_frame(stream, FrameKind::Proof, &secret.proof(role as u8, mine, theirs)).await?;
    stream.flush().await?;
    let proof = read_frame(stream, 64).await?.ok_or(WireError::Truncated)?;
    if proof.kind != FrameKind::Proof {
        return Err(WireError::UnexpectedFrame { expected: "proof", found: proof.kind.name() });
    }
    let accepted = secret.verify(&proof.payload, peer as u8, theirs, mine);
    write_frame(stream, FrameKind::Proof, &[u8::from(accepted)]).await?;
    stream.flush().await?;
    let verdict = read_frame(stream, 64).await?.ok_or(WireError::Truncated)?;
    if !accepted {
        return Err(WireError::Unauthenticated(format!(
            "the peer ({peer:?}) holds another cluster secret (or replayed an old handshake)"
        )));
    }
    if verdict.kind != FrameKind::Proof || verdict.payload != [1] {
        return Err(WireError::Unauthenticated(format!(
            "the peer ({peer:?}) refused this process's proof: the two hold different cluster secrets"
        )));
    }
    Ok(())
}

/// A connection's reading half: a TCP socket's, or a TLS session's over one.
pub type ReadStream = Box<dyn AsyncRead + Send + Unpin>;
/// A connection's writing half.
pub type WriteStream = Box<dyn AsyncWrite + Send + Unpin>;

/// Buffer of each half: a shuffle block arrives in few reads.
const STREAM_BUFFER_BYTES: usize = 256 * 1024;

/// A handshaken TCP connection split into a buffered reader and writer.
pub struct Connection {
    pub reader: BufReader<ReadStream>,
    pub writer: BufWriter<WriteStream>,
    pub peer_role: Role,
}

impl Connection {
    /// Dials `address` (in TLS when the process has it: `tls`) and shakes hands.
    pub async fn connect(address: &str, role: Role) -> Result<Connection, WireError> {
        let stream = TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        match tls::process_tls() {
            None => Connection::over_tcp(stream, role).await,
            Some(tls) => {
                let name = tls::server_name(address).map_err(WireError::Tls)?;
                let session = tls.connector().connect(name, stream).await.map_err(|error| {
                    WireError::Tls(format!("TLS with {address} failed: {error} (do both ends use the cluster's CA?)"))
                })?;
                Connection::over(session, role).await
            }
        }
    }

    /// Shakes hands on a connection this process accepted (in TLS when it has it).
    pub async fn establish(stream: TcpStream, role: Role) -> Result<Connection, WireError> {
        stream.set_nodelay(true)?;
        match tls::process_tls().and_then(tls::Tls::acceptor) {
            None => Connection::over_tcp(stream, role).await,
            Some(acceptor) => {
                let session = acceptor
                    .accept(stream)
                    .await
                    .map_err(|error| WireError::Tls(format!("a peer's TLS handshake failed: {error}")))?;
                Connection::over(session, role).await
            }
        }
    }

    /// A plain socket splits without the lock a TLS session's halves share.
    async fn over_tcp(mut stream: TcpStream, role: Role) -> Result<Connection, WireError> {
        let peer_role = handshake(&mut stream, role).await?;
        let (read, write) = stream.into_split();
        Ok(Connection::from_halves(Box::new(read), Box::new(write), peer_role))
    }

    async fn over<S: AsyncRead + AsyncWrite + Send + Unpin + 'static>(
        mut stream: S,
        role: Role,
    ) -> Result<Connection, WireError> {
        let peer_role = handshake(&mut stream, role).await?;
        let (read, write) = tokio::io::split(stream);
        Ok(Connection::from_halves(Box::new(read), Box::new(write), peer_role))
    }

    fn from_halves(read: ReadStream, write: WriteStream, peer_role: Role) -> Connection {
        Connection {
            reader: BufReader::with_capacity(STREAM_BUFFER_BYTES, read),
            writer: BufWriter::with_capacity(STREAM_BUFFER_BYTES, write),
            peer_role,
        }
    }

    /// Sends a JSON control message (client connections).
    pub async fn send<T: Serialize>(&mut self, message: &T) -> Result<(), WireError> {
        write_control(&mut self.writer, message).await?;
        self.writer.flush().await?;
        Ok(())
    }

    /// Sends a binary message (connections between sleet processes).
    pub async fn send_binary<T: Serialize>(&mut self, message: &T) -> Result<(), WireError> {
        write_binary(&mut self.writer, message).await?;
        self.writer.flush().await?;
        Ok(())
    }

    pub async fn recv(&mut self) -> Result<Option<Frame>, WireError> {
        read_frame(&mut self.reader, MAX_FRAME_BYTES).await
    }

    pub fn into_split(self) -> (BufReader<ReadStream>, BufWriter<WriteStream>) {
        (self.reader, self.writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::duplex;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
    }

    async fn encoded(kind: FrameKind, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_frame(&mut out, kind, payload).await.expect("encode");
        out
    }

    fn check_read(bytes: Vec<u8>, limit: u32, expected: Result<Option<Frame>, &str>) {
        runtime().block_on(async {
            let mut reader = &bytes[..];
            let got = read_frame(&mut reader, limit).await;
            match (got, expected) {
                (Ok(frame), Ok(want)) => assert_eq!(frame, want),
                (Err(error), Err(want)) => assert!(error.to_string().contains(want), "error `{error}` lacks `{want}`"),
                (got, want) => panic!("got {got:?}, expected {want:?}"),
            }
        });
    }

    #[test]
    fn round_trips_a_frame() {
        let bytes = runtime().block_on(encoded(FrameKind::Control, b"{\"a\":1}"));
        check_read(bytes, 1024, Ok(Some(Frame { kind: FrameKind::Control, payload: b"{\"a\":1}".to_vec() })));
    }

    #[test]
    fn the_binary_encoding_is_postcards() {
        let long_text = "x".repeat(BYTEWISE_LEN_MAX * 40);
        let message: (u8, u64, i64, i64, Vec<u32>, &str, &str) =
            (7, u64::MAX, i64::MIN, 1_790_000_000_000_000, (0..300).collect(), "short", &long_text);
        let encoded = encode_binary(&message);
        assert_eq!(encoded, postcard::to_stdvec(&message).expect("postcard encodes"));
        assert_eq!(
            decode_binary::<(u8, u64, i64, i64, Vec<u32>, String, String)>(&encoded, "test").expect("decodes").6,
            long_text
        );
    }

    #[test]
    fn clean_close_between_frames_is_none() {
        check_read(Vec::new(), 1024, Ok(None));
    }

    #[test]
    fn truncated_frames_are_errors() {
        let bytes = runtime().block_on(encoded(FrameKind::Data, &[7u8; 100]));
        for cut in [2, 4, 5, 50, bytes.len() - 1] {
            check_read(bytes[..cut].to_vec(), 1024, Err("closed in the middle of a frame"));
        }
    }

    #[test]
    fn oversized_length_is_rejected_before_allocating() {
        let mut bytes = u32::MAX.to_be_bytes().to_vec();
        bytes.push(FrameKind::Data as u8);
        check_read(bytes, MAX_FRAME_BYTES, Err("exceeds the limit"));
        let bytes = runtime().block_on(encoded(FrameKind::Data, &[0u8; 2000]));
        check_read(bytes, 1000, Err("2001 bytes exceeds the limit of 1000"));
    }

    #[test]
    fn unknown_kind_is_rejected() {
        check_read(vec![0, 0, 0, 2, 9, 0], 1024, Err("unknown frame kind 9"));
    }

    #[test]
    fn data_frame_carries_header_and_body() {
        runtime().block_on(async {
            let mut out = Vec::new();
            write_data(&mut out, &vec![1u32, 2], b"BODY").await.expect("encode");
            let frame = read_frame(&mut &out[..], 1024).await.expect("read").expect("a frame");
            let (header, body): (Vec<u32>, &[u8]) = frame.data("test").expect("data");
            assert_eq!(header, vec![1, 2]);
            assert_eq!(body, b"BODY");
        });
    }

    #[test]
    fn handshake_agrees_on_roles() {
        runtime().block_on(async {
            let (mut left, mut right) = duplex(1024);
            let (a, b) = tokio::join!(handshake(&mut left, Role::Worker), handshake(&mut right, Role::Driver));
            assert_eq!(a.expect("left"), Role::Driver);
            assert_eq!(b.expect("right"), Role::Worker);
        });
    }

    #[test]
    fn handshake_fails_clearly_on_wrong_version() {
        runtime().block_on(async {
            let (mut ours, mut theirs) = duplex(1024);
            let mut hello = MAGIC.to_vec();
            hello.extend_from_slice(&(PROTOCOL_VERSION + 1).to_be_bytes());
            hello.extend_from_slice(&[Role::Worker as u8, 0]);
            write_frame(&mut theirs, FrameKind::Hello, &hello).await.expect("send");
            let error = handshake(&mut ours, Role::Driver).await.expect_err("must fail");
            assert!(
                matches!(error, WireError::VersionMismatch { ours: PROTOCOL_VERSION, theirs } if theirs == PROTOCOL_VERSION + 1),
                "{error}"
            );
            assert!(error.to_string().contains("version mismatch"));
        });
    }

    #[test]
    fn a_peer_that_closes_during_the_hello_is_named_as_a_likely_tls_peer() {
        runtime().block_on(async {
            let (mut ours, theirs) = duplex(1024);
            drop(theirs);
            let error = handshake_with(&mut ours, Role::Worker, None).await.expect_err("the peer is gone");
            assert!(matches!(error, WireError::Tls(_)), "{error}");
            assert!(error.to_string().contains("--tls-ca"), "{error}");
        });
    }

    #[test]
    fn the_hello_goes_out_in_one_write() {
        runtime().block_on(async {
            // A writer that takes one write and then fails, as a socket does once a TLS peer
            // has refused the first bytes it read.
            struct OneWrite(Vec<u8>, usize);
            impl tokio::io::AsyncWrite for OneWrite {
                fn poll_write(
                    mut self: std::pin::Pin<&mut Self>,
                    _: &mut std::task::Context<'_>,
                    bytes: &[u8],
                ) -> std::task::Poll<std::io::Result<usize>> {
                    self.1 += 1;
                    if self.1 > 1 {
                        return std::task::Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
                    }
                    self.0.extend_from_slice(bytes);
                    std::task::Poll::Ready(Ok(bytes.len()))
                }
                fn poll_flush(
                    self: std::pin::Pin<&mut Self>,
                    _: &mut std::task::Context<'_>,
                ) -> std::task::Poll<std::io::Result<()>> {
                    std::task::Poll::Ready(Ok(()))
                }
                fn poll_shutdown(
                    self: std::pin::Pin<&mut Self>,
                    _: &mut std::task::Context<'_>,
                ) -> std::task::Poll<std::io::Result<()>> {
                    std::task::Poll::Ready(Ok(()))
                }
            }
            impl tokio::io::AsyncRead for OneWrite {
                fn poll_read(
                    self: std::pin::Pin<&mut Self>,
                    _: &mut std::task::Context<'_>,
                    _: &mut tokio::io::ReadBuf<'_>,
                ) -> std::task::Poll<std::io::Result<()>> {
                    std::task::Poll::Ready(Ok(()))
                }
            }
            let mut stream = OneWrite(Vec::new(), 0);
            let error = handshake_with(&mut stream, Role::Worker, None).await.expect_err("nothing comes back");
            assert!(matches!(error, WireError::Truncated), "the hello was written whole, then read: {error}");
            let frame = read_frame(&mut stream.0.as_slice(), 64).await.expect("a frame").expect("not empty");
            assert_eq!(frame.kind, FrameKind::Hello);
        });
    }

    fn secret(text: &str) -> Secret {
        Secret::new(text).expect("long enough")
    }

    /// Both ends of one handshake, with these secrets.
    async fn both_ends(
        left: Option<&Secret>,
        right: Option<&Secret>,
    ) -> (Result<Role, WireError>, Result<Role, WireError>) {
        let (mut a, mut b) = duplex(4096);
        tokio::join!(handshake_with(&mut a, Role::Worker, left), handshake_with(&mut b, Role::Driver, right))
    }

    #[test]
    fn a_shared_secret_is_proven_both_ways_and_a_wrong_or_missing_one_is_refused_by_both() {
        runtime().block_on(async {
            let (ours, other) = (secret("the cluster's own secret"), secret("some other cluster's one"));
            let (worker, driver) = both_ends(Some(&ours), Some(&ours)).await;
            assert_eq!((worker.expect("worker"), driver.expect("driver")), (Role::Driver, Role::Worker));

            let (worker, driver) = both_ends(Some(&other), Some(&ours)).await;
            for error in [worker.expect_err("refused"), driver.expect_err("refuses")] {
                assert!(matches!(error, WireError::Unauthenticated(_)), "{error}");
                assert!(error.to_string().contains("another cluster secret") || error.to_string().contains("refused"));
            }
            let (worker, driver) = both_ends(None, Some(&ours)).await;
            assert!(worker.expect_err("has none").to_string().contains("this process has none"));
            assert!(driver.expect_err("requires one").to_string().contains("proves no cluster secret"));
        });
    }

    #[test]
    fn a_recorded_handshake_replayed_to_a_new_connection_is_refused() {
        runtime().block_on(async {
            let ours = secret("the cluster's own secret");
            // Record what a genuine worker sends: its hello and its proof for one driver nonce.
            let (mut worker_end, mut recorder) = duplex(4096);
            let (mut recorded_hello, mut recorded_proof) = (None, None);
            let driver_nonce = auth::nonce();
            let worker = tokio::spawn({
                let ours = ours.clone();
                async move { handshake_with(&mut worker_end, Role::Worker, Some(&ours)).await }
            });
            let mut hello = MAGIC.to_vec();
            hello.extend_from_slice(&PROTOCOL_VERSION.to_be_bytes());
            hello.extend_from_slice(&[Role::Driver as u8, 1]);
            hello.extend_from_slice(&driver_nonce);
            write_frame(&mut recorder, FrameKind::Hello, &hello).await.expect("send");
            recorder.flush().await.expect("flush");
            if let Some(frame) = read_frame(&mut recorder, 64).await.expect("hello") {
                recorded_hello = Some(frame.payload);
            }
            if let Some(frame) = read_frame(&mut recorder, 64).await.expect("proof") {
                recorded_proof = Some(frame.payload);
            }
            write_frame(&mut recorder, FrameKind::Proof, &[0]).await.expect("send");
            write_frame(&mut recorder, FrameKind::Proof, &[0]).await.expect("send");
            recorder.flush().await.expect("flush");
            let _ = worker.await;

            // Replay both to a real driver: its nonce is new, so the old proof fails.
            let (mut attacker, mut driver_end) = duplex(4096);
            let driver = tokio::spawn(async move { handshake_with(&mut driver_end, Role::Driver, Some(&ours)).await });
            write_frame(&mut attacker, FrameKind::Hello, &recorded_hello.expect("recorded")).await.expect("send");
            write_frame(&mut attacker, FrameKind::Proof, &recorded_proof.expect("recorded")).await.expect("send");
            write_frame(&mut attacker, FrameKind::Proof, &[1]).await.expect("send");
            attacker.flush().await.expect("flush");
            let error = driver.await.expect("joined").expect_err("a replay is refused");
            assert!(matches!(error, WireError::Unauthenticated(_)), "{error}");
        });
    }

    #[test]
    fn handshake_rejects_a_stranger() {
        runtime().block_on(async {
            let (mut ours, mut theirs) = duplex(1024);
            write_frame(&mut theirs, FrameKind::Hello, b"HTTP/1").await.expect("send");
            let error = handshake(&mut ours, Role::Driver).await.expect_err("must fail");
            assert!(matches!(error, WireError::BadMagic(_)), "{error}");
        });
    }
}
