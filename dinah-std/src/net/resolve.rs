//! Names: [`ToSocketAddrs`], what the sockets accept as an address, and
//! [`lookup_host`], which resolves a name on the process's I/O pool, off the
//! executor's thread.
#![forbid(unsafe_code)]

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// An address as the caller gave it: known already, or a name to look up.
#[derive(Debug)]
#[doc(hidden)]
pub enum Addrs {
    /// Addresses known without a lookup (literals).
    Known(Vec<SocketAddr>),
    /// `host:port` to resolve.
    Name(String),
}

mod sealed {
    pub trait Sealed {}
}

/// What a socket accepts as an address, as `std::net::ToSocketAddrs`
/// does: a `SocketAddr` (or its halves), a slice of them, or a string
/// `"host:port"` / a pair `("host", port)`.
///
/// A literal (`"127.0.0.1:8080"`, `("::1", 80)`) is parsed where it is
/// given. A name (`"localhost:8080"`) is resolved by
/// [`lookup_host`] on the process's I/O pool, so that the operating system's
/// lookup, which blocks, never runs on an executor's thread.
///
/// Sealed: dinah implements it for the types above and references to
/// them.
pub trait ToSocketAddrs: sealed::Sealed {
    /// The addresses, or the name to resolve.
    #[doc(hidden)]
    fn to_addrs(&self) -> Addrs;
}

macro_rules! known {
    ($($ty:ty),*) => {$(
        impl sealed::Sealed for $ty {}
        impl ToSocketAddrs for $ty {
            fn to_addrs(&self) -> Addrs {
                Addrs::Known(vec![SocketAddr::from(*self)])
            }
        }
    )*};
}

known!(
    SocketAddr,
    SocketAddrV4,
    SocketAddrV6,
    (IpAddr, u16),
    (Ipv4Addr, u16),
    (Ipv6Addr, u16)
);

impl sealed::Sealed for [SocketAddr] {}
impl ToSocketAddrs for [SocketAddr] {
    fn to_addrs(&self) -> Addrs {
        Addrs::Known(self.to_vec())
    }
}

impl sealed::Sealed for str {}
impl ToSocketAddrs for str {
    fn to_addrs(&self) -> Addrs {
        match self.parse::<SocketAddr>() {
            Ok(addr) => Addrs::Known(vec![addr]),
            Err(_) => Addrs::Name(self.to_owned()),
        }
    }
}

impl sealed::Sealed for String {}
impl ToSocketAddrs for String {
    fn to_addrs(&self) -> Addrs {
        self.as_str().to_addrs()
    }
}

impl sealed::Sealed for (&str, u16) {}
impl ToSocketAddrs for (&str, u16) {
    fn to_addrs(&self) -> Addrs {
        let (host, port) = *self;
        match host.parse::<IpAddr>() {
            Ok(ip) => Addrs::Known(vec![SocketAddr::new(ip, port)]),
            Err(_) => Addrs::Name(format!("{host}:{port}")),
        }
    }
}

impl sealed::Sealed for (String, u16) {}
impl ToSocketAddrs for (String, u16) {
    fn to_addrs(&self) -> Addrs {
        (self.0.as_str(), self.1).to_addrs()
    }
}

impl<T: ToSocketAddrs + ?Sized> sealed::Sealed for &T {}
impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {
    fn to_addrs(&self) -> Addrs {
        (**self).to_addrs()
    }
}

/// The addresses `addr` stands for: a literal at once, a name through the
/// operating system's resolver, run on the process's I/O pool
/// ([`IO_POOL_THREADS`](crate::pool::IO_POOL_THREADS) threads,
/// [`IO_POOL_QUEUE`](crate::pool::IO_POOL_QUEUE) queued; a lookup past
/// both waits for room), never on the executor's thread.
///
/// Cancel safe in effect: dropped while it waits, the lookup it started
/// still runs to its end on the pool, and its result is dropped.
///
/// # Errors
///
/// The resolver's (`"no such host"` and the like); `InvalidInput` for a
/// string that is not `host:port`; an error if the pool could not start a
/// thread.
pub async fn lookup_host(addr: impl ToSocketAddrs) -> io::Result<Vec<SocketAddr>> {
    match addr.to_addrs() {
        Addrs::Known(addrs) => Ok(addrs),
        Addrs::Name(name) => {
            crate::pool::run_on_io_pool(move || {
                std::net::ToSocketAddrs::to_socket_addrs(&name).map(Iterator::collect)
            })
            .await
        }
    }
}

/// The addresses of `addr` known without a lookup, for the calls that
/// cannot wait for one (`bind`).
///
/// # Errors
///
/// `InvalidInput` for a name, which needs [`lookup_host`] first.
pub(crate) fn known_addrs(addr: &impl ToSocketAddrs) -> io::Result<Vec<SocketAddr>> {
    match addr.to_addrs() {
        Addrs::Known(addrs) => Ok(addrs),
        Addrs::Name(name) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "dinah: {name:?} is a name; bind does not wait for a lookup: \
                 use lookup_and_bind, or net::lookup_host first"
            ),
        )),
    }
}

/// Runs `attempt` on each address in turn until one succeeds: its result,
/// or the last error (as `std`'s `connect` and `bind` do).
pub(crate) fn first_ok<T>(
    addrs: Vec<SocketAddr>,
    mut attempt: impl FnMut(SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let mut last = None;
    for addr in addrs {
        match attempt(addr) {
            Ok(done) => return Ok(done),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(no_addresses))
}

/// The error for a name or slice that gave no address.
pub(crate) fn no_addresses() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "dinah: the address resolved to no socket address",
    )
}
