//! A TCP listener that holds at most `connections_max` connections open: it accepts the next
//! one only when an earlier one has closed, so connections beyond the bound wait in the
//! kernel's backlog instead of costing the server memory.
//!
//! A connection that moves no byte either way for a whole `idle_timeout` period is closed
//! (after one to two periods of silence), so clients that connect and then stall, or trickle
//! a request slower than that, cannot hold every slot. Reads and writes only set a flag: the
//! timer is looked at when it fires, never reset on the data path.
//!
//! Each connection's kernel send buffer is fixed at `SEND_BUFFER_BYTES` rather than left to
//! grow to megabytes: the server only ever sends small answers, and a WebSocket client that
//! stops reading its acknowledgements is then noticed after kilobytes, not megabytes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

const SEND_BUFFER_BYTES: usize = 64 << 10;

pub struct LimitedListener {
    listener: TcpListener,
    slots: Arc<Semaphore>,
    idle_timeout: Duration,
}

/// An accepted connection; its slot is given back when it is dropped (closed).
pub struct LimitedStream {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    idle_timeout: Duration,
    /// Fires at the end of each `idle_timeout` period.
    idle: Pin<Box<Sleep>>,
    /// Whether a byte moved either way in the current period.
    moved: bool,
}

impl LimitedListener {
    pub fn new(listener: TcpListener, connections_max: usize, idle_timeout: Duration) -> Self {
        LimitedListener { listener, slots: Arc::new(Semaphore::new(connections_max)), idle_timeout }
    }
}

impl LimitedStream {
    /// A read that found nothing: an error once a whole period has passed with no byte
    /// moved, so the server closes the connection and gives its slot back.
    fn pending_or_idle(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.idle.as_mut().poll(cx).is_ready() {
            if !std::mem::take(&mut self.moved) {
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no byte either way for {:?}", self.idle_timeout),
                )));
            }
            let next = Instant::now() + self.idle_timeout;
            self.idle.as_mut().reset(next);
        }
        Poll::Pending
    }

    /// Passes a write's outcome through, counting bytes written as activity.
    fn wrote(&mut self, written: Poll<std::io::Result<usize>>) -> Poll<std::io::Result<usize>> {
        if matches!(written, Poll::Ready(Ok(bytes)) if bytes > 0) {
            self.moved = true;
        }
        written
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
                    let idle = Box::pin(tokio::time::sleep(self.idle_timeout));
                    let idle_timeout = self.idle_timeout;
                    return (LimitedStream { stream, _slot: slot, idle_timeout, idle, moved: false }, address);
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
        let filled_before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Pending => self.pending_or_idle(cx),
            ready => {
                if buf.filled().len() > filled_before {
                    self.moved = true;
                }
                ready
            }
        }
    }
}

impl AsyncWrite for LimitedStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.wrote(written)
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
        let written = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.wrote(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
