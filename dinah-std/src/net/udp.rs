//! [`UdpSocket`].
#![forbid(unsafe_code)]

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use super::Registered;
use super::resolve::{ToSocketAddrs, first_ok, known_addrs, lookup_host, no_addresses};
use crate::io::Interest;

/// A UDP socket on the executor's reactor.
///
/// Guarantees: every send or receive that returns `Pending` is woken when
/// the socket becomes ready that way, however many tasks wait that way at
/// once (each retries; those that find nothing wait again); an `async`
/// operation dropped while it waits takes its waker back, a `poll_*`
/// call's stays until the next readiness in its direction. Each datagram is received whole (a
/// buffer too small for it gets its first bytes, the rest is dropped, as
/// the OS does). Not promised: delivery or order of datagrams (UDP's).
pub struct UdpSocket {
    inner: Registered<mio::net::UdpSocket>,
}

impl UdpSocket {
    /// Binds to `addr` (the first of its addresses that binds) and
    /// registers with the reactor of the executor on this thread.
    ///
    /// # Errors
    ///
    /// The OS's; `InvalidInput` for a name (this call does not wait for a
    /// lookup: [`lookup_and_bind`](Self::lookup_and_bind) does); an error
    /// when no executor was made or entered on this thread.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<Self> {
        let addrs = known_addrs(&addr)?;
        Self::from_std(first_ok(addrs, std::net::UdpSocket::bind)?)
    }

    /// Binds to `addr` as [`bind`](Self::bind) does, a name included
    /// (`"localhost:9000"`): it is looked up first by
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

    /// Takes over a bound `std` socket: sets it non-blocking and registers
    /// it (see [`bind`](Self::bind)).
    ///
    /// # Errors
    ///
    /// As [`bind`](Self::bind).
    pub fn from_std(socket: std::net::UdpSocket) -> io::Result<Self> {
        socket.set_nonblocking(true)?;
        let label = format!("udp {}", socket.local_addr()?);
        Ok(Self {
            inner: Registered::new(mio::net::UdpSocket::from_std(socket), label)?,
        })
    }

    /// The address it is bound to.
    ///
    /// # Errors
    ///
    /// The OS's.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.source.local_addr()
    }

    /// Sets the one peer [`send`](Self::send) goes to and
    /// [`recv`](Self::recv) accepts from (the first of `addr`'s addresses
    /// the OS takes).
    ///
    /// # Errors
    ///
    /// The OS's; `InvalidInput` for a name, as [`bind`](Self::bind).
    pub fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        let addrs = known_addrs(&addr)?;
        first_ok(addrs, |addr| self.inner.source.connect(addr))
    }

    /// Sends `buf` as one datagram to `target` (a name is looked up
    /// first, and the datagram goes to its first address of this socket's
    /// family, IPv4 or IPv6, or else its first): how many bytes went.
    ///
    /// # Errors
    ///
    /// The OS's (for example a datagram too large), or the lookup's.
    pub async fn send_to(&self, buf: &[u8], target: impl ToSocketAddrs) -> io::Result<usize> {
        let target = same_family(lookup_host(target).await?, self.local_addr()?)?;
        let mut wait = self.inner.wait(Interest::Write);
        poll_fn(|cx| wait.poll(cx, |socket| socket.send_to(buf, target))).await
    }

    super::datagram::datagram_io!(SocketAddr);

    /// [`send_to`](Self::send_to) as a poll.
    ///
    /// # Errors
    ///
    /// As [`send_to`](Self::send_to).
    pub fn poll_send_to(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
        target: SocketAddr,
    ) -> Poll<io::Result<usize>> {
        self.inner
            .poll_io(cx, Interest::Write, |socket| socket.send_to(buf, target))
    }

    /// [`recv_from`](Self::recv_from) as a poll.
    ///
    /// # Errors
    ///
    /// As [`recv_from`](Self::recv_from).
    pub fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<(usize, SocketAddr)>> {
        self.inner
            .poll_io(cx, Interest::Read, |socket| socket.recv_from(buf))
    }
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UdpSocket").field(&self.inner).finish()
    }
}

/// The first of `addrs` in `local`'s family (IPv4 or IPv6), or else the
/// first.
fn same_family(addrs: Vec<SocketAddr>, local: SocketAddr) -> io::Result<SocketAddr> {
    addrs
        .iter()
        .find(|addr| addr.is_ipv4() == local.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(no_addresses)
}
