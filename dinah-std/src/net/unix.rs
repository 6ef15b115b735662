//! [`UnixListener`], [`UnixStream`] and [`UnixDatagram`]: Unix domain
//! sockets, with the contracts of the TCP and UDP types.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::os::unix::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::Registered;
use crate::io::{Interest, Reactor};
use crate::runtime::context;

/// What the diagnosis calls a Unix socket: `unix` and its path (or the
/// peer's), `unix (unnamed)` for one with neither.
fn label(kind: &str, local: io::Result<SocketAddr>, peer: io::Result<SocketAddr>) -> String {
    let named = |addr: io::Result<SocketAddr>| {
        addr.ok()
            .and_then(|addr| addr.as_pathname().map(|path| path.display().to_string()))
    };
    match (named(local), named(peer)) {
        (Some(local), Some(peer)) => format!("{kind} {local} -> {peer}"),
        (Some(local), None) => format!("{kind} {local}"),
        (None, Some(peer)) => format!("{kind} -> {peer}"),
        (None, None) => format!("{kind} (unnamed)"),
    }
}

/// A Unix domain socket listening for connections, on the executor's
/// reactor.
///
/// Guarantees: those of [`TcpListener`](super::TcpListener): accepting
/// waits without blocking the thread, every task waiting to accept is woken
/// when a connection is ready, and each accepted stream is registered with
/// this listener's reactor. Not promised: which waiting task gets a
/// connection; that the socket's file is removed when the listener is
/// dropped (it is not, as with `std`'s: remove it yourself).
pub struct UnixListener {
    inner: Registered<mio::net::UnixListener>,
}

impl UnixListener {
    /// Binds to the socket file `path` (which must not exist yet) and
    /// registers with the reactor of the executor on this thread.
    ///
    /// # Errors
    ///
    /// The OS's (for example `AddrInUse` when the file exists), or an error
    /// when no executor was made or entered on this thread.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<Self> {
        Self::from_std(std::os::unix::net::UnixListener::bind(path)?)
    }

    /// Takes over a bound `std` listener: sets it non-blocking and
    /// registers it (see [`bind`](Self::bind)).
    ///
    /// # Errors
    ///
    /// As [`bind`](Self::bind).
    pub fn from_std(listener: std::os::unix::net::UnixListener) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        let label = label(
            "unix listener",
            listener.local_addr(),
            Err(io::ErrorKind::NotConnected.into()),
        );
        Ok(Self {
            inner: Registered::new(mio::net::UnixListener::from_std(listener), label)?,
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

    /// Waits for a connection: the stream and the peer's address (usually
    /// unnamed).
    ///
    /// Cancel safe: dropped before it completes, no connection is lost.
    ///
    /// # Errors
    ///
    /// The OS's (for example too many open files).
    pub async fn accept(&self) -> io::Result<(UnixStream, SocketAddr)> {
        let mut wait = self.inner.wait(Interest::Read);
        let accepted = poll_fn(|cx| wait.poll(cx, mio::net::UnixListener::accept)).await;
        self.register_accepted(accepted)
    }

    /// [`accept`](Self::accept) as a poll.
    ///
    /// # Errors
    ///
    /// As [`accept`](Self::accept).
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(UnixStream, SocketAddr)>> {
        self.inner
            .poll_io(cx, Interest::Read, mio::net::UnixListener::accept)
            .map(|accepted| self.register_accepted(accepted))
    }

    fn register_accepted(
        &self,
        accepted: io::Result<(mio::net::UnixStream, SocketAddr)>,
    ) -> io::Result<(UnixStream, SocketAddr)> {
        let (stream, peer) = accepted?;
        UnixStream::register(Arc::clone(self.inner.reactor()), stream).map(|stream| (stream, peer))
    }
}

impl fmt::Debug for UnixListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UnixListener").field(&self.inner).finish()
    }
}

/// A Unix domain stream connection on the executor's reactor.
///
/// Guarantees: those of [`TcpStream`](super::TcpStream): reads and writes
/// take `&self`, every operation that returns `Pending` is woken when its
/// direction becomes ready (or the connection closes or fails), an `async`
/// operation dropped while it waits takes its waker back. With the
/// `futures-io` feature it implements `AsyncRead` and `AsyncWrite`. Not
/// promised: that a `read` fills the buffer.
pub struct UnixStream {
    inner: Registered<mio::net::UnixStream>,
}

impl UnixStream {
    fn register(reactor: Arc<Reactor>, stream: mio::net::UnixStream) -> io::Result<Self> {
        let label = label("unix", stream.local_addr(), stream.peer_addr());
        Ok(Self {
            inner: Registered::with(reactor, stream, label)?,
        })
    }

    /// Connects to the socket file `path`, waiting without blocking the
    /// thread.
    ///
    /// # Errors
    ///
    /// The OS's (`NotFound` without the file, `ConnectionRefused` with
    /// nobody listening), or an error when no executor was made or entered
    /// on this thread.
    pub async fn connect(path: impl AsRef<Path>) -> io::Result<Self> {
        let reactor = context::current_reactor()?;
        let stream = Self::register(reactor, mio::net::UnixStream::connect(path)?)?;
        super::stream::connected(&stream.inner, mio::net::UnixStream::take_error, |socket| {
            socket.peer_addr().map(drop)
        })
        .await?;
        Ok(stream)
    }

    /// Two streams connected to each other, both registered with the
    /// reactor of the executor on this thread.
    ///
    /// # Errors
    ///
    /// The OS's, or an error when no executor was made or entered on this
    /// thread.
    pub fn pair() -> io::Result<(Self, Self)> {
        let reactor = context::current_reactor()?;
        let (a, b) = mio::net::UnixStream::pair()?;
        Ok((
            Self::register(Arc::clone(&reactor), a)?,
            Self::register(reactor, b)?,
        ))
    }

    /// Takes over a connected `std` stream: sets it non-blocking and
    /// registers it with the reactor of the executor on this thread.
    ///
    /// # Errors
    ///
    /// As [`pair`](Self::pair).
    pub fn from_std(stream: std::os::unix::net::UnixStream) -> io::Result<Self> {
        stream.set_nonblocking(true)?;
        Self::register(
            context::current_reactor()?,
            mio::net::UnixStream::from_std(stream),
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
}

impl fmt::Debug for UnixStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UnixStream").field(&self.inner).finish()
    }
}

#[cfg(feature = "futures-io")]
super::stream::futures_io_traits!(UnixStream);

/// A Unix domain datagram socket on the executor's reactor.
///
/// Guarantees: those of [`UdpSocket`](super::UdpSocket): every send or
/// receive that returns `Pending` is woken when the socket becomes ready
/// that way, and each datagram is received whole (cut to the buffer).
/// Unlike UDP, a Unix datagram socket is reliable and keeps order; a send
/// to a peer whose queue is full waits (it is not dropped).
pub struct UnixDatagram {
    inner: Registered<mio::net::UnixDatagram>,
}

impl UnixDatagram {
    fn register(reactor: Arc<Reactor>, socket: mio::net::UnixDatagram) -> io::Result<Self> {
        let label = label("unix datagram", socket.local_addr(), socket.peer_addr());
        Ok(Self {
            inner: Registered::with(reactor, socket, label)?,
        })
    }

    /// Binds to the socket file `path` and registers with the reactor of
    /// the executor on this thread.
    ///
    /// # Errors
    ///
    /// The OS's, or an error when no executor was made or entered on this
    /// thread.
    pub fn bind(path: impl AsRef<Path>) -> io::Result<Self> {
        let reactor = context::current_reactor()?;
        Self::register(reactor, mio::net::UnixDatagram::bind(path)?)
    }

    /// A socket bound to no path (it can send, and receive replies only
    /// once [connected](Self::connect)).
    ///
    /// # Errors
    ///
    /// As [`bind`](Self::bind).
    pub fn unbound() -> io::Result<Self> {
        let reactor = context::current_reactor()?;
        Self::register(reactor, mio::net::UnixDatagram::unbound()?)
    }

    /// Two sockets connected to each other.
    ///
    /// # Errors
    ///
    /// As [`bind`](Self::bind).
    pub fn pair() -> io::Result<(Self, Self)> {
        let reactor = context::current_reactor()?;
        let (a, b) = mio::net::UnixDatagram::pair()?;
        Ok((
            Self::register(Arc::clone(&reactor), a)?,
            Self::register(reactor, b)?,
        ))
    }

    /// Sets the one peer [`send`](Self::send) goes to and
    /// [`recv`](Self::recv) accepts from.
    ///
    /// # Errors
    ///
    /// The OS's.
    pub fn connect(&self, path: impl AsRef<Path>) -> io::Result<()> {
        self.inner.source.connect(path)
    }

    /// The address it is bound to.
    ///
    /// # Errors
    ///
    /// The OS's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.source.local_addr()
    }

    /// Sends `buf` as one datagram to the socket at `path`.
    ///
    /// # Errors
    ///
    /// The OS's (for example `NotFound`, or a datagram too large).
    pub async fn send_to(&self, buf: &[u8], path: impl AsRef<Path>) -> io::Result<usize> {
        let path = path.as_ref();
        let mut wait = self.inner.wait(Interest::Write);
        poll_fn(|cx| wait.poll(cx, |socket| socket.send_to(buf, path))).await
    }

    super::datagram::datagram_io!(SocketAddr);
}

impl fmt::Debug for UnixDatagram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UnixDatagram").field(&self.inner).finish()
    }
}
