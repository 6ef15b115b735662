//! [`TcpListener`] and [`TcpStream`].
#![forbid(unsafe_code)]

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use super::Registered;
use super::resolve::{ToSocketAddrs, first_ok, known_addrs, lookup_host, no_addresses};
use crate::io::Interest;

/// A TCP socket listening for connections, on the executor's reactor.
///
/// Guarantees: [`accept`](Self::accept) waits without blocking the thread;
/// any number of tasks may accept on one listener at once, and every one
/// of them is woken when a connection is ready: one takes it, the others
/// find the backlog empty and wait again, so no connection waits in the
/// backlog while a task waits to accept. Each accepted stream is
/// registered with this listener's reactor. Not promised: which of the
/// waiting tasks gets a connection (no order among them).
pub struct TcpListener {
    inner: Registered<mio::net::TcpListener>,
}

impl TcpListener {
    /// Binds to `addr` (port 0: one the OS picks; see
    /// [`local_addr`](Self::local_addr)) and registers with the reactor of
    /// the executor on this thread. Of several addresses, the first that
    /// binds.
    ///
    /// # Errors
    ///
    /// The OS's; `InvalidInput` for a name (this call does not wait for a
    /// lookup: [`lookup_and_bind`](Self::lookup_and_bind) does); an error
    /// when no executor was made or entered on this thread.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<Self> {
        let addrs = known_addrs(&addr)?;
        Self::from_std(first_ok(addrs, std::net::TcpListener::bind)?)
    }

    /// Binds to `addr` as [`bind`](Self::bind) does, a name included
    /// (`"localhost:8080"`): it is looked up first by
    /// [`lookup_host`](super::lookup_host), on the process's I/O pool, off
    /// this thread. A literal needs no lookup.
    ///
    /// # Errors
    ///
    /// The lookup's, then [`bind`](Self::bind)'s.
    pub async fn lookup_and_bind(addr: impl ToSocketAddrs) -> io::Result<Self> {
        let addrs = lookup_host(addr).await?;
        Self::bind(addrs.as_slice())
    }

    /// Takes over a bound `std` listener: sets it non-blocking and
    /// registers it (see [`bind`](Self::bind)).
    ///
    /// # Errors
    ///
    /// As [`bind`](Self::bind).
    pub fn from_std(listener: std::net::TcpListener) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        let label = format!("tcp listener {}", listener.local_addr()?);
        Ok(Self {
            inner: Registered::new(mio::net::TcpListener::from_std(listener), label)?,
        })
    }

    /// The address it listens on.
    ///
    /// # Errors
    ///
    /// The OS's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.source.local_addr()
    }

    /// Waits for a connection: the stream and the peer's address.
    ///
    /// Cancel safe: dropped before it completes, no connection is lost
    /// (it stays in the OS's backlog).
    ///
    /// # Errors
    ///
    /// The OS's (for example too many open files).
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let mut wait = self.inner.wait(Interest::Read);
        let accepted = poll_fn(|cx| wait.poll(cx, mio::net::TcpListener::accept)).await;
        self.register_accepted(accepted)
    }

    /// [`accept`](Self::accept) as a poll: `Pending` (with `cx`'s waker
    /// kept among the listener's waiters until the next connection comes,
    /// even if the caller stops polling) until a connection is ready.
    ///
    /// # Errors
    ///
    /// As [`accept`](Self::accept).
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        self.inner
            .poll_io(cx, Interest::Read, mio::net::TcpListener::accept)
            .map(|accepted| self.register_accepted(accepted))
    }

    /// Registers an accepted stream with this listener's reactor.
    fn register_accepted(
        &self,
        accepted: io::Result<(mio::net::TcpStream, SocketAddr)>,
    ) -> io::Result<(TcpStream, SocketAddr)> {
        let (stream, peer) = accepted?;
        let reactor = std::sync::Arc::clone(self.inner.reactor());
        TcpStream::register(reactor, stream).map(|stream| (stream, peer))
    }
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TcpListener").field(&self.inner).finish()
    }
}

/// A TCP connection on the executor's reactor.
///
/// Reads and writes take `&self`: one task may read while another writes,
/// and several tasks may read (or write) at once. Dropping it closes the
/// connection and deregisters it.
///
/// Guarantees: every operation that returns `Pending` is woken when its
/// direction becomes ready (or the connection closes or fails), however
/// many tasks wait that way: each retries, and those that find nothing
/// wait again; readiness that comes while an operation runs is never
/// lost. An `async` operation dropped while it waits takes its waker
/// back; a `poll_*` call's waker stays until the next readiness in its
/// direction. Not promised: that a
/// `read` fills the buffer (it returns what is there, at least one byte,
/// or 0 at the end).
pub struct TcpStream {
    inner: Registered<mio::net::TcpStream>,
}

impl TcpStream {
    fn register(
        reactor: std::sync::Arc<crate::io::Reactor>,
        stream: mio::net::TcpStream,
    ) -> io::Result<Self> {
        let label = label(&stream);
        Ok(Self {
            inner: Registered::with(reactor, stream, label)?,
        })
    }

    /// Connects to `addr`, waiting without blocking the thread: a name is
    /// looked up first ([`lookup_host`](super::lookup_host)), and its
    /// addresses are tried in turn until one connects.
    ///
    /// # Errors
    ///
    /// The OS's for the last address tried (for example
    /// `ConnectionRefused`), the lookup's, or an error when no executor was
    /// made or entered on this thread.
    pub async fn connect(addr: impl ToSocketAddrs) -> io::Result<Self> {
        let mut last = None;
        for addr in lookup_host(addr).await? {
            match Self::connect_one(addr).await {
                Ok(stream) => return Ok(stream),
                Err(error) => last = Some(error),
            }
        }
        Err(last.unwrap_or_else(no_addresses))
    }

    async fn connect_one(addr: SocketAddr) -> io::Result<Self> {
        let stream = mio::net::TcpStream::connect(addr)?;
        let stream = Self::register(crate::runtime::context::current_reactor()?, stream)?;
        // Connected when writable, and then the error (if any) is the
        // connection's.
        super::stream::connected(&stream.inner, mio::net::TcpStream::take_error, |socket| {
            socket.peer_addr().map(drop)
        })
        .await?;
        Ok(stream)
    }

    /// Takes over a connected `std` stream: sets it non-blocking and
    /// registers it with the reactor of the executor on this thread.
    ///
    /// # Errors
    ///
    /// The OS's, or an error when no executor was made or entered on this
    /// thread.
    pub fn from_std(stream: std::net::TcpStream) -> io::Result<Self> {
        stream.set_nonblocking(true)?;
        Self::register(
            crate::runtime::context::current_reactor()?,
            mio::net::TcpStream::from_std(stream),
        )
    }

    super::stream::stream_io!();

    /// The peer's address.
    ///
    /// # Errors
    ///
    /// The OS's.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.source.peer_addr()
    }

    /// This end's address.
    ///
    /// # Errors
    ///
    /// The OS's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.source.local_addr()
    }

    /// Sets `TCP_NODELAY` (no Nagle delay for small writes).
    ///
    /// # Errors
    ///
    /// The OS's.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.inner.source.set_nodelay(nodelay)
    }
}

/// What the diagnosis calls a stream.
fn label(stream: &mio::net::TcpStream) -> String {
    match (stream.local_addr(), stream.peer_addr()) {
        (Ok(local), Ok(peer)) => format!("tcp {local} -> {peer}"),
        (Ok(local), Err(_)) => format!("tcp {local}"),
        _ => "tcp".to_owned(),
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TcpStream").field(&self.inner).finish()
    }
}

#[cfg(feature = "futures-io")]
super::stream::futures_io_traits!(TcpStream);
