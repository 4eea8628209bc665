//! A TCP listener that holds at most `connections_max` connections open: it accepts the next
//! one only when an earlier one has closed, so connections beyond the bound wait in the
//! kernel's backlog instead of costing the server memory.
//!
//! Each connection's kernel send buffer is fixed at `SEND_BUFFER_BYTES` rather than left to
//! grow to megabytes: the server only ever sends small answers, and a WebSocket client that
//! stops reading its acknowledgements is then noticed after kilobytes, not megabytes.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

const SEND_BUFFER_BYTES: usize = 64 << 10;

pub struct LimitedListener {
    listener: TcpListener,
    slots: Arc<Semaphore>,
}

/// An accepted connection; its slot is given back when it is dropped (closed).
pub struct LimitedStream {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
}

impl LimitedListener {
    pub fn new(listener: TcpListener, connections_max: usize) -> Self {
        LimitedListener { listener, slots: Arc::new(Semaphore::new(connections_max)) }
    }
}

impl axum::serve::Listener for LimitedListener {
    type Io = LimitedStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let slot = Arc::clone(&self.slots).acquire_owned().await.expect("the semaphore is never closed");
        loop {
            match self.listener.accept().await {
                Ok((stream, address)) => {
                    let _ = stream.set_nodelay(true);
                    let _ = socket2::SockRef::from(&stream).set_send_buffer_size(SEND_BUFFER_BYTES);
                    return (LimitedStream { stream, _slot: slot }, address);
                }
                // Out of file descriptors and the like: wait rather than spin.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}

impl AsyncRead for LimitedStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for LimitedStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
