//! What every byte stream on the reactor does, TCP or Unix: waiting for a
//! connection to complete, and the reads, writes and shutdowns that
//! [`TcpStream`](super::TcpStream) and [`UnixStream`](super::UnixStream)
//! share, written once (`stream_io!`) with their contracts.
#![forbid(unsafe_code)]

use std::future::poll_fn;
use std::io;

use super::Registered;
use crate::io::Interest;

/// Whether a read or write of `len` bytes that moved `n` emptied the
/// socket's buffer (or filled it): it moved some, but less than `len`.
pub(super) fn short_of(len: usize) -> impl Fn(&usize) -> bool {
    move |&n| n > 0 && n < len
}

/// Waits until a connect started without blocking has finished: the
/// socket is writable, and then its pending error (if any) is the
/// connection's. `peer` says whether it has a peer yet (`NotConnected`:
/// not yet).
pub(super) async fn connected<S: mio::event::Source>(
    stream: &Registered<S>,
    take_error: impl Fn(&S) -> io::Result<Option<io::Error>>,
    peer: impl Fn(&S) -> io::Result<()>,
) -> io::Result<()> {
    let mut wait = stream.wait(Interest::Write);
    poll_fn(|cx| {
        wait.poll(cx, |socket| {
            if let Some(error) = take_error(socket)? {
                return Err(error);
            }
            match peer(socket) {
                Ok(()) => Ok(()),
                Err(error) if error.kind() == io::ErrorKind::NotConnected => {
                    Err(io::ErrorKind::WouldBlock.into())
                }
                Err(error) => Err(error),
            }
        })
    })
    .await
}

/// The reads, writes and shutdown of a stream type whose registered
/// source is `self.inner` (a `mio` stream read and written through `&`).
macro_rules! stream_io {
    () => {
        /// Reads what is there into `buf`: at least one byte, or 0 at the
        /// end of the stream (or for an empty `buf`).
        ///
        /// Cancel safe: dropped before it completes, nothing was read.
        ///
        /// # Errors
        ///
        /// The OS's (for example `ConnectionReset`).
        pub async fn read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
            let mut wait = self.inner.wait($crate::io::Interest::Read);
            let len = buf.len();
            std::future::poll_fn(|cx| {
                wait.poll_part(
                    cx,
                    |mut socket| std::io::Read::read(&mut socket, buf),
                    $crate::net::stream::short_of(len),
                )
            })
            .await
        }

        /// Writes some of `buf`: how much was taken.
        ///
        /// Cancel safe: dropped before it completes, nothing was written.
        ///
        /// # Errors
        ///
        /// The OS's (for example `BrokenPipe`).
        pub async fn write(&self, buf: &[u8]) -> std::io::Result<usize> {
            let mut wait = self.inner.wait($crate::io::Interest::Write);
            let len = buf.len();
            std::future::poll_fn(|cx| {
                wait.poll_part(
                    cx,
                    |mut socket| std::io::Write::write(&mut socket, buf),
                    $crate::net::stream::short_of(len),
                )
            })
            .await
        }

        /// Writes all of `buf`.
        ///
        /// Not cancel safe: dropped part way, some of `buf` may have been
        /// sent.
        ///
        /// # Errors
        ///
        /// The OS's; `WriteZero` if the socket took nothing.
        pub async fn write_all(&self, mut buf: &[u8]) -> std::io::Result<()> {
            while !buf.is_empty() {
                let n = self.write(buf).await?;
                if n == 0 {
                    return Err(std::io::ErrorKind::WriteZero.into());
                }
                buf = &buf[n..];
            }
            Ok(())
        }

        /// [`read`](Self::read) as a poll.
        ///
        /// # Errors
        ///
        /// As [`read`](Self::read).
        pub fn poll_read(
            &self,
            cx: &mut std::task::Context<'_>,
            buf: &mut [u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let len = buf.len();
            self.inner.poll_io_part(
                cx,
                $crate::io::Interest::Read,
                |mut socket| std::io::Read::read(&mut socket, buf),
                $crate::net::stream::short_of(len),
            )
        }

        /// [`write`](Self::write) as a poll.
        ///
        /// # Errors
        ///
        /// As [`write`](Self::write).
        pub fn poll_write(
            &self,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let len = buf.len();
            self.inner.poll_io_part(
                cx,
                $crate::io::Interest::Write,
                |mut socket| std::io::Write::write(&mut socket, buf),
                $crate::net::stream::short_of(len),
            )
        }

        /// Shuts down the read half, the write half (the peer reads the
        /// end of the stream) or both.
        ///
        /// # Errors
        ///
        /// The OS's (for example `NotConnected`).
        pub fn shutdown(&self, how: std::net::Shutdown) -> std::io::Result<()> {
            self.inner.source.shutdown(how)
        }
    };
}
pub(super) use stream_io;

/// `futures-io`'s traits on `&$stream` (reads and writes take `&self`)
/// and, through it, on `$stream`.
#[cfg(feature = "futures-io")]
macro_rules! futures_io_traits {
    ($stream:ty) => {
        impl futures_io::AsyncRead for &$stream {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                <$stream>::poll_read(&self, cx, buf)
            }
        }

        impl futures_io::AsyncWrite for &$stream {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                <$stream>::poll_write(&self, cx, buf)
            }
            /// Nothing is buffered here.
            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }
            /// Shuts down the write half.
            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(self.shutdown(std::net::Shutdown::Write))
            }
        }

        impl futures_io::AsyncRead for $stream {
            fn poll_read(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &mut [u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut &*self).poll_read(cx, buf)
            }
        }

        impl futures_io::AsyncWrite for $stream {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut &*self).poll_write(cx, buf)
            }
            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut &*self).poll_flush(cx)
            }
            fn poll_close(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut &*self).poll_close(cx)
            }
        }
    };
}
#[cfg(feature = "futures-io")]
pub(super) use futures_io_traits;
