//! hyper's I/O traits over a `futures-io` stream.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_io::{AsyncRead, AsyncWrite};

/// Bytes read at most per `poll_read`: hyper's smallest read buffer.
const CHUNK: usize = 4096;

/// A `futures-io` stream (dinah's `TcpStream`, or one built on it) as
/// hyper's [`Read`](hyper::rt::Read) and [`Write`](hyper::rt::Write).
///
/// Reads go through a buffer of 4 KiB that this wrapper allocates, zeroed,
/// on its first read and keeps: hyper's read cursor hands out uninitialised
/// memory only through `unsafe`, which dinah does not use here, so each
/// read lands in that buffer and is copied into hyper's. No read is
/// larger than 4 KiB. Writes go straight to the stream; `poll_flush` is
/// the stream's, and `poll_shutdown` is its `poll_close` (for a TCP
/// stream, a shutdown of the write half).
///
/// Guarantees: every byte the stream returns reaches hyper, in order, and
/// a read that hyper's cursor has no room for is not made. Does not
/// guarantee anything about timeouts: hyper's, through a [`HyperTimer`](crate::HyperTimer), do that.
#[derive(Debug)]
pub struct HyperIo<T> {
    inner: T,
    /// The read buffer, empty until the first read.
    chunk: Vec<u8>,
}

impl<T> HyperIo<T> {
    /// Wraps `inner`. Nothing is allocated until the first read.
    pub const fn new(inner: T) -> Self {
        Self {
            inner,
            chunk: Vec::new(),
        }
    }

    /// The stream.
    pub const fn inner(&self) -> &T {
        &self.inner
    }

    /// The stream, to change.
    pub const fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// Unwraps the stream. Nothing read is left behind: every read was
    /// handed to hyper at once.
    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: AsyncRead + Unpin> hyper::rt::Read for HyperIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let room = buf.remaining().min(CHUNK);
        if room == 0 {
            return Poll::Ready(Ok(()));
        }
        if this.chunk.is_empty() {
            this.chunk = vec![0; CHUNK];
        }
        let chunk = &mut this.chunk[..room];
        match Pin::new(&mut this.inner).poll_read(cx, chunk) {
            Poll::Ready(Ok(n)) => {
                buf.put_slice(&chunk[..n]);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncWrite + Unpin> hyper::rt::Write for HyperIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}
