//! TCP, UDP and (on Unix) Unix domain sockets whose waits the executor's
//! reactor wakes (see [`io`](crate::io)).
//!
//! Each socket registers with the reactor of the executor on this thread
//! when it is made (or converted with `from_std`), and deregisters when
//! dropped. Operations are `async`, and each also has a `poll_*` form for
//! hand-written futures; with the `futures-io` feature [`TcpStream`]
//! implements `AsyncRead` and `AsyncWrite`, so codecs and protocols
//! written for those traits work on it.
//!
//! Addresses are anything [`ToSocketAddrs`] takes: a `SocketAddr`, a
//! literal string (`"127.0.0.1:8080"`), or a name (`"localhost:8080"`).
//! `connect`, `send_to` and `lookup_and_bind` resolve a name with
//! [`lookup_host`], on the process's I/O pool, never on the executor's
//! thread; `bind`, which does not wait, takes literals only (a name there is
//! refused as `InvalidInput`, naming `lookup_and_bind`).
//!
//! # Example
//!
//! An echo over loopback:
//!
//! ```
//! use dinah::LocalExecutor;
//! use dinah::net::{TcpListener, TcpStream};
//!
//! let executor = LocalExecutor::new();
//! // Sockets register with the executor made (or entered) on this thread.
//! let listener = TcpListener::bind("127.0.0.1:0")?;
//! let addr = listener.local_addr()?;
//! let server = executor
//!     .try_spawn(async move {
//!         let (stream, _) = listener.accept().await?;
//!         let mut buf = [0u8; 5];
//!         let n = stream.read(&mut buf).await?;
//!         stream.write_all(&buf[..n]).await
//!     })
//!     .unwrap_or_else(|_| unreachable!("an empty executor has room"));
//! let echoed = executor.block_on(async {
//!     let client = TcpStream::connect(addr).await?;
//!     client.write_all(b"hello").await?;
//!     let mut buf = [0u8; 5];
//!     let mut got = 0;
//!     while got < buf.len() {
//!         got += client.read(&mut buf[got..]).await?;
//!     }
//!     server.await??;
//!     Ok::<_, Box<dyn std::error::Error>>(buf)
//! })?;
//! assert_eq!(&echoed, b"hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod datagram;
mod resolve;
mod stream;
mod tcp;
mod udp;
#[cfg(unix)]
mod unix;

pub use resolve::{ToSocketAddrs, lookup_host};
pub use tcp::{TcpListener, TcpStream};
pub use udp::UdpSocket;
#[cfg(unix)]
pub use unix::{UnixDatagram, UnixListener, UnixStream};

use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::io::{Interest, Reactor, Registration, WaitKey};
use crate::runtime::context;

/// A `mio` source registered with a reactor; deregistered when dropped.
/// (Sockets here, and the signal listeners of [`signal`](crate::signal).)
pub(crate) struct Registered<S: mio::event::Source> {
    pub(crate) source: S,
    registration: Registration,
}

impl<S: mio::event::Source> Registered<S> {
    /// Registers `source` with the reactor of the executor on this thread.
    pub(crate) fn new(source: S, label: String) -> io::Result<Self> {
        Self::with(context::current_reactor()?, source, label)
    }

    /// Registers `source` with `reactor`.
    pub(crate) fn with(reactor: Arc<Reactor>, mut source: S, label: String) -> io::Result<Self> {
        let (token, io) = reactor.register(&mut source, label.into())?;
        Ok(Self {
            source,
            registration: Registration { reactor, io, token },
        })
    }

    /// Runs `op` once `interest` is ready (see [`Registration::poll_io`]),
    /// for a `poll_*` call: its waker stays among the waiters until the
    /// next readiness in that direction.
    pub(crate) fn poll_io<R>(
        &self,
        cx: &mut Context<'_>,
        interest: Interest,
        op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_io_part(cx, interest, op, |_| false)
    }

    /// [`poll_io`](Self::poll_io) for a stream's read or write, which
    /// `drained` says emptied the socket's buffer (see
    /// [`Registration::poll_io`]).
    pub(crate) fn poll_io_part<R>(
        &self,
        cx: &mut Context<'_>,
        interest: Interest,
        mut op: impl FnMut(&S) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        let mut key = WaitKey::ANONYMOUS;
        let poll = self
            .registration
            .poll_io(cx, interest, &mut key, || op(&self.source), drained);
        self.noted(poll, interest)
    }

    /// Notes a pending wait in the runtime context, for the executor's
    /// telemetry (a plain store).
    #[inline]
    fn noted<R>(&self, poll: Poll<R>, interest: Interest) -> Poll<R> {
        if poll.is_pending() {
            context::note_io_wait(self.registration.token, interest);
        }
        poll
    }

    /// An `async` operation's wait in `interest`: dropped before the
    /// operation completes, it takes its waker back out.
    pub(crate) fn wait(&self, interest: Interest) -> Waiting<'_, S> {
        Waiting {
            on: self,
            interest,
            key: WaitKey::FRESH,
        }
    }

    fn reactor(&self) -> &Arc<Reactor> {
        &self.registration.reactor
    }
}

/// One `async` operation's place among a source's waiters.
pub(crate) struct Waiting<'a, S: mio::event::Source> {
    on: &'a Registered<S>,
    interest: Interest,
    key: WaitKey,
}

impl<S: mio::event::Source> Waiting<'_, S> {
    /// Runs `op` once the direction is ready, waiting under this key.
    pub(crate) fn poll<R>(
        &mut self,
        cx: &mut Context<'_>,
        op: impl FnMut(&S) -> io::Result<R>,
    ) -> Poll<io::Result<R>> {
        self.poll_part(cx, op, |_| false)
    }

    /// [`poll`](Self::poll) for a stream's read or write, which `drained`
    /// says emptied the socket's buffer.
    pub(crate) fn poll_part<R>(
        &mut self,
        cx: &mut Context<'_>,
        mut op: impl FnMut(&S) -> io::Result<R>,
        drained: impl Fn(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        let source = &self.on.source;
        let poll =
            self.on
                .registration
                .poll_io(cx, self.interest, &mut self.key, || op(source), drained);
        self.on.noted(poll, self.interest)
    }
}

impl<S: mio::event::Source> Drop for Waiting<'_, S> {
    fn drop(&mut self) {
        self.on.registration.io.forget(self.interest, self.key);
    }
}

impl<S: mio::event::Source> Drop for Registered<S> {
    fn drop(&mut self) {
        self.registration
            .reactor
            .deregister(&mut self.source, self.registration.token);
    }
}

impl<S: mio::event::Source + std::fmt::Debug> std::fmt::Debug for Registered<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source.fmt(f)
    }
}
