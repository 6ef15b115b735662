//! hyper's runtime traits over dinah: its I/O traits over a
//! [`dinah::net::TcpStream`], and its timer over dinah's timers. This is
//! all hyper needs to serve and send HTTP/1 on dinah's executor, with no
//! tokio runtime.
// Each user takes the parts it needs.
#![allow(dead_code)]

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use dinah::net::TcpStream;
use dinah::time::TimerDriver;

/// A dinah TCP stream as hyper's `Read` and `Write`.
pub(crate) struct HyperIo(pub(crate) TcpStream);

impl hyper::rt::Read for HyperIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // hyper's cursor hands out uninitialised memory only through
        // `unsafe`; a small buffer and one copy keep this safe.
        let mut chunk = [0u8; 4096];
        let room = buf.remaining().min(chunk.len());
        match self.0.poll_read(cx, &mut chunk[..room]) {
            Poll::Ready(Ok(n)) => {
                buf.put_slice(&chunk[..n]);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl hyper::rt::Write for HyperIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.0.shutdown(std::net::Shutdown::Write))
    }
}

/// hyper's timer on a dinah executor's timers. Its `std::time::Instant`s are read
/// off the executor's clock (so a paused clock is followed exactly): an
/// `Instant` fixed when the timer was made, plus the clock's reading.
#[derive(Clone)]
pub(crate) struct HyperTimer {
    timers: dinah::time::TimerHandle,
    /// The `Instant` the executor's clock reading 0 stands for.
    origin: Instant,
}

impl HyperTimer {
    pub(crate) fn new(timers: dinah::time::TimerHandle) -> Self {
        let origin = Instant::now() - Duration::from_micros(timers.now().ticks());
        Self { timers, origin }
    }
}

/// A dinah sleep as hyper's `Sleep`.
struct HyperSleep(dinah::time::Sleep<dinah::time::TimerHandle>);

impl Future for HyperSleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl hyper::rt::Sleep for HyperSleep {}

impl hyper::rt::Timer for HyperTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(HyperSleep(self.timers.clone().sleep(duration)))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        let micros = deadline.saturating_duration_since(self.origin).as_micros();
        let at = u64::try_from(micros).unwrap_or(u64::MAX);
        Box::pin(HyperSleep(
            self.timers
                .clone()
                .sleep_until(dinah::time::Instant::from_ticks(at)),
        ))
    }

    fn now(&self) -> Instant {
        self.origin + Duration::from_micros(self.timers.now().ticks())
    }
}
