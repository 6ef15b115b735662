//! Names and literals as addresses: literals parsed where they are given,
//! names looked up on the resolver pool (for a connect, a datagram's target
//! and `lookup_and_bind`), every address of a name tried in turn, a datagram sent to the address of the socket's family, and the
//! typed errors for a name where no lookup may wait and for a string that
//! is no address. Only `localhost` is looked up: the tests need no network.
//! Not under Miri, which cannot call the system's resolver.
#![cfg(not(miri))]

use std::io;
use std::net::{Ipv4Addr, SocketAddr};

use dinah::LocalExecutor;
use dinah::net::{TcpListener, TcpStream, UdpSocket, lookup_host};

#[test]
fn literals_need_no_lookup_and_localhost_resolves_to_loopback() {
    let executor = LocalExecutor::new();
    executor.block_on(async {
        let literal = lookup_host("127.0.0.1:80").await.unwrap();
        assert_eq!(literal, ["127.0.0.1:80".parse::<SocketAddr>().unwrap()]);
        let pair = lookup_host(("::1", 443)).await.unwrap();
        assert_eq!(pair, ["[::1]:443".parse::<SocketAddr>().unwrap()]);
        let named = lookup_host("localhost:8080").await.unwrap();
        assert!(!named.is_empty());
        assert!(
            named
                .iter()
                .all(|addr| addr.ip().is_loopback() && addr.port() == 8080),
            "{named:?}"
        );
        let owned = lookup_host((String::from("localhost"), 9)).await.unwrap();
        assert!(owned.iter().all(|addr| addr.port() == 9), "{owned:?}");
    });
}

#[test]
fn connect_by_name_tries_each_address_until_one_listens() {
    let executor = LocalExecutor::new();
    // Listening on IPv4 only: if `localhost` gives `::1` first, that
    // attempt is refused and the next address connects.
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = executor
        .try_spawn(async move { listener.accept().await.map(|(_, peer)| peer) })
        .unwrap_or_else(|_| unreachable!());
    let (stream, peer) = executor
        .block_on(async {
            let stream = TcpStream::connect(format!("localhost:{port}")).await?;
            Ok::<_, io::Error>((stream, accepted.await.unwrap()?))
        })
        .unwrap();
    assert_eq!(stream.local_addr().unwrap(), peer);
    // A slice: the closed port is refused, the next one connects.
    let closed = {
        let probe = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        probe.local_addr().unwrap()
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let open = listener.local_addr().unwrap();
    let connected = executor
        .block_on(async { TcpStream::connect(&[closed, open][..]).await })
        .unwrap();
    assert_eq!(connected.peer_addr().unwrap(), open);
}

#[test]
fn a_datagram_to_a_name_goes_to_the_address_of_the_sockets_family() {
    let executor = LocalExecutor::new();
    executor
        .block_on(async {
            let receiver = UdpSocket::bind("127.0.0.1:0")?;
            let port = receiver.local_addr()?.port();
            let sender = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
            assert_eq!(sender.send_to(b"hi", format!("localhost:{port}")).await?, 2);
            let mut buf = [0u8; 8];
            let (n, from) = receiver.recv_from(&mut buf).await?;
            assert_eq!((&buf[..n], from), (&b"hi"[..], sender.local_addr()?));
            Ok::<(), io::Error>(())
        })
        .unwrap();
}

#[test]
fn lookup_and_bind_binds_a_name_after_its_lookup() {
    let executor = LocalExecutor::new();
    executor
        .block_on(async {
            let listener = TcpListener::lookup_and_bind("localhost:0").await?;
            let addr = listener.local_addr()?;
            assert!(addr.ip().is_loopback(), "{addr}");
            let (connected, accepted) =
                futures_util::future::join(TcpStream::connect(addr), listener.accept()).await;
            assert_eq!(connected?.local_addr()?, accepted?.1);

            let socket = UdpSocket::lookup_and_bind(("localhost", 0)).await?;
            assert!(socket.local_addr()?.ip().is_loopback());
            let literal = UdpSocket::lookup_and_bind("127.0.0.1:0").await?;
            socket.send_to(b"named", literal.local_addr()?).await?;
            let mut buf = [0u8; 8];
            let (n, from) = literal.recv_from(&mut buf).await?;
            assert_eq!((&buf[..n], from), (&b"named"[..], socket.local_addr()?));
            Ok::<(), io::Error>(())
        })
        .unwrap();
}

#[test]
fn names_where_no_lookup_may_wait_and_strings_that_are_no_address_are_typed_errors() {
    let executor = LocalExecutor::new();
    executor.block_on(async {
        let named = TcpListener::bind("localhost:0").unwrap_err();
        assert_eq!(named.kind(), io::ErrorKind::InvalidInput, "{named}");
        assert!(named.to_string().contains("lookup_and_bind"), "{named}");
        let named = UdpSocket::bind(("localhost", 0)).unwrap_err();
        assert_eq!(named.kind(), io::ErrorKind::InvalidInput, "{named}");
        let nonsense = lookup_host("no port here").await.unwrap_err();
        assert_eq!(nonsense.kind(), io::ErrorKind::InvalidInput, "{nonsense}");
        let empty = TcpStream::connect(&[][..]).await.unwrap_err();
        assert_eq!(empty.kind(), io::ErrorKind::InvalidInput, "{empty}");
    });
}
