//! What every datagram socket on the reactor does, UDP or Unix: receiving
//! from anyone, and sending to and receiving from a connected peer,
//! written once (`datagram_io!`) for [`UdpSocket`](super::UdpSocket) and
//! [`UnixDatagram`](super::UnixDatagram).
#![forbid(unsafe_code)]

/// `recv_from`, `send` and `recv` of a datagram type whose registered
/// source is `self.inner`; `$addr` is its address type.
macro_rules! datagram_io {
    ($addr:ty) => {
        /// Receives one datagram into `buf`: its length (cut to `buf`'s)
        /// and sender.
        ///
        /// Cancel safe: dropped before it completes, no datagram was taken.
        ///
        /// # Errors
        ///
        /// The OS's.
        pub async fn recv_from(&self, buf: &mut [u8]) -> std::io::Result<(usize, $addr)> {
            let mut wait = self.inner.wait($crate::io::Interest::Read);
            std::future::poll_fn(|cx| wait.poll(cx, |socket| socket.recv_from(buf))).await
        }

        /// Sends `buf` to the [connected](Self::connect) peer.
        ///
        /// # Errors
        ///
        /// The OS's; `NotConnected` without a peer.
        pub async fn send(&self, buf: &[u8]) -> std::io::Result<usize> {
            let mut wait = self.inner.wait($crate::io::Interest::Write);
            std::future::poll_fn(|cx| wait.poll(cx, |socket| socket.send(buf))).await
        }

        /// Receives one datagram from the [connected](Self::connect) peer.
        ///
        /// Cancel safe, as [`recv_from`](Self::recv_from).
        ///
        /// # Errors
        ///
        /// The OS's.
        pub async fn recv(&self, buf: &mut [u8]) -> std::io::Result<usize> {
            let mut wait = self.inner.wait($crate::io::Interest::Read);
            std::future::poll_fn(|cx| wait.poll(cx, |socket| socket.recv(buf))).await
        }
    };
}
pub(super) use datagram_io;
