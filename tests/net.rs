//! Sockets on the reactor, over loopback only: every test makes a bounded
//! number of connections and datagrams and ends by itself. Order is
//! proven with the protocol's own sequence, never with time.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use dinah::executor::ExecutorConfig;
use dinah::io::{Interest, IoWait};
use dinah::net::{TcpListener, TcpStream, UdpSocket};
use dinah::telemetry::{ManualClock, TelemetryConfig, Thresholds, Verdict};
use dinah::{LocalExecutor, WorkerPool};

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Reads until `buf` is full.
async fn read_full(stream: &TcpStream, buf: &mut [u8]) -> std::io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match stream.read(&mut buf[got..]).await? {
            0 => return Err(ErrorKind::UnexpectedEof.into()),
            n => got += n,
        }
    }
    Ok(())
}

#[test]
fn a_connection_echoes_and_both_ends_deregister_on_drop() {
    let executor = LocalExecutor::new();
    let listener = TcpListener::bind(loopback()).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = executor
        .try_spawn(async move {
            let (stream, peer) = listener.accept().await?;
            assert_eq!(stream.peer_addr()?, peer);
            let mut buf = [0u8; 64];
            loop {
                let n = stream.read(&mut buf).await?;
                if n == 0 {
                    return Ok::<(), std::io::Error>(());
                }
                stream.write_all(&buf[..n]).await?;
            }
        })
        .unwrap_or_else(|_| unreachable!());
    executor
        .block_on(async {
            let client = TcpStream::connect(addr).await?;
            client.set_nodelay(true)?;
            for round in 0..50u8 {
                let message = [round; 64];
                client.write_all(&message).await?;
                let mut back = [0u8; 64];
                read_full(&client, &mut back).await?;
                assert_eq!(back, message);
            }
            drop(client);
            server.await.unwrap()
        })
        .unwrap();
    let figures = executor.io_figures();
    // The listener, the accepted stream and the client.
    assert_eq!(figures.registered, 3);
    assert_eq!(figures.deregistered, 3);
    assert_eq!(figures.live, 0);
    assert!(figures.events > 0);
}

#[test]
fn many_connections_at_once_each_get_their_own_bytes() {
    // Fewer under Miri, which runs each system call interpreted.
    const CONNECTIONS: usize = if cfg!(miri) { 4 } else { 32 };
    let executor = LocalExecutor::new();
    let listener = TcpListener::bind(loopback()).unwrap();
    let addr = listener.local_addr().unwrap();
    let spawner = executor.local_spawner();
    let server = executor
        .try_spawn(async move {
            for _ in 0..CONNECTIONS {
                let (stream, _) = listener.accept().await?;
                drop(
                    spawner
                        .try_spawn(async move {
                            let mut buf = [0u8; 8];
                            read_full(&stream, &mut buf).await?;
                            buf.reverse();
                            stream.write_all(&buf).await
                        })
                        .unwrap_or_else(|_| unreachable!()),
                );
            }
            Ok::<(), std::io::Error>(())
        })
        .unwrap_or_else(|_| unreachable!());
    let clients: Vec<_> = (0..CONNECTIONS as u64)
        .map(|i| {
            executor
                .try_spawn(async move {
                    let stream = TcpStream::connect(addr).await?;
                    stream.write_all(&i.to_le_bytes()).await?;
                    let mut back = [0u8; 8];
                    read_full(&stream, &mut back).await?;
                    Ok::<u64, std::io::Error>(u64::from_be_bytes(back))
                })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    executor.block_on(async {
        for (i, client) in clients.into_iter().enumerate() {
            assert_eq!(client.await.unwrap().unwrap(), i as u64);
        }
        server.await.unwrap().unwrap();
    });
    assert_eq!(executor.io_figures().registered, 1 + 2 * CONNECTIONS as u64);
}

#[test]
fn shutting_down_the_write_half_ends_the_peers_reads_and_the_other_half_still_works() {
    let executor = LocalExecutor::new();
    let listener = TcpListener::bind(loopback()).unwrap();
    let addr = listener.local_addr().unwrap();
    executor.block_on(async {
        let client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        client.write_all(b"last words").await.unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4];
        loop {
            match server.read(&mut buf).await.unwrap() {
                0 => break,
                n => got.extend_from_slice(&buf[..n]),
            }
        }
        assert_eq!(got, b"last words");
        // The end stays the end.
        assert_eq!(server.read(&mut buf).await.unwrap(), 0);
        server.write_all(b"reply").await.unwrap();
        let mut reply = [0u8; 5];
        read_full(&client, &mut reply).await.unwrap();
        assert_eq!(&reply, b"reply");
    });
}

// Miri cannot run UDP sockets (it has no `sendto` or socket `ioctl`).
#[cfg(not(miri))]
#[test]
fn udp_datagrams_go_both_ways_and_a_connected_socket_sends_to_its_peer() {
    let executor = LocalExecutor::new();
    executor.block_on(async {
        let a = UdpSocket::bind(loopback()).unwrap();
        let b = UdpSocket::bind(loopback()).unwrap();
        let (a_addr, b_addr) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        for i in 0..10u8 {
            assert_eq!(a.send_to(&[i; 3], b_addr).await.unwrap(), 3);
            let mut buf = [0u8; 16];
            let (n, from) = b.recv_from(&mut buf).await.unwrap();
            assert_eq!((&buf[..n], from), (&[i; 3][..], a_addr));
        }
        b.connect(a_addr).unwrap();
        assert_eq!(b.send(b"pong").await.unwrap(), 4);
        let mut buf = [0u8; 16];
        let (n, from) = a.recv_from(&mut buf).await.unwrap();
        assert_eq!((&buf[..n], from), (&b"pong"[..], b_addr));
        a.send_to(b"ping", b_addr).await.unwrap();
        assert_eq!(b.recv(&mut buf).await.unwrap(), 4);
    });
}

#[test]
fn std_sockets_are_taken_over_and_a_refused_connection_is_an_error() {
    let executor = LocalExecutor::new();
    let std_listener = std::net::TcpListener::bind(loopback()).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let listener = TcpListener::from_std(std_listener).unwrap();
    let std_client = std::net::TcpStream::connect(addr).unwrap();
    let client = TcpStream::from_std(std_client).unwrap();
    executor.block_on(async {
        let (server, _) = listener.accept().await.unwrap();
        client.write_all(b"x").await.unwrap();
        let mut buf = [0u8; 1];
        read_full(&server, &mut buf).await.unwrap();
        assert_eq!(&buf, b"x");
        // A port nobody listens on any more.
        let closed = {
            let gone = std::net::TcpListener::bind(loopback()).unwrap();
            gone.local_addr().unwrap()
        };
        let refused = TcpStream::connect(closed).await.unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
    });
}

#[test]
fn without_an_executor_on_the_thread_a_socket_is_a_clear_error() {
    thread::spawn(|| {
        let error = TcpListener::bind(loopback()).unwrap_err();
        assert!(
            error.to_string().contains("no executor on this thread"),
            "{error}"
        );
        if !cfg!(miri) {
            let error = UdpSocket::bind(loopback()).unwrap_err();
            assert!(
                error.to_string().contains("no executor on this thread"),
                "{error}"
            );
        }
    })
    .join()
    .unwrap();
}

#[test]
fn a_wake_from_another_thread_cuts_the_reactor_wait_short() {
    let executor = LocalExecutor::new();
    let pool = WorkerPool::new(dinah::CoreConfig::new(1).unwrap(), 4).unwrap();
    // A socket, so the executor waits in its reactor from now on.
    let _socket = TcpListener::bind(loopback()).unwrap();
    let (go, wait) = mpsc::channel::<()>();
    let job = pool
        .try_spawn(move || {
            wait.recv().unwrap();
            7
        })
        .unwrap_or_else(|_| unreachable!());
    let spawner = executor.spawner();
    let other = thread::spawn(move || {
        // Released only once the executor has had its chance to wait: the
        // job below is pending by then, or done; either way it completes.
        go.send(()).unwrap();
        spawner
            .try_spawn(async { Ok::<u8, ()>(5) })
            .unwrap_or_else(|_| unreachable!())
    });
    let (job, remote) = executor.block_on(async {
        let job = job.await.unwrap();
        let remote = other.join().unwrap().await.unwrap().unwrap();
        (job, remote)
    });
    assert_eq!((job, remote), (7, 5));
}

#[test]
fn a_timer_ends_the_reactor_wait_when_no_socket_is_ready() {
    let executor = LocalExecutor::with_config(ExecutorConfig {
        start_paused: true,
        ..ExecutorConfig::default()
    })
    .unwrap();
    let listener = TcpListener::bind(loopback()).unwrap();
    let got = executor
        .block_on(async { dinah::time::timeout(Duration::from_secs(5), listener.accept()).await });
    assert!(got.is_err(), "nobody connects, so the timeout fires");
    assert_eq!(executor.timer().now().ticks(), 5_000_000);
}

#[test]
fn a_task_waiting_on_a_quiet_socket_is_no_wake_naming_the_socket_and_the_way() {
    let clock = ManualClock::new();
    let executor = LocalExecutor::with_telemetry(
        ExecutorConfig::default(),
        TelemetryConfig::new().with_clock(clock.clone()),
    )
    .unwrap();
    let monitor = executor.monitor();
    let listener = TcpListener::bind(loopback()).unwrap();
    let mut peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (stream, _) = executor.block_on(listener.accept()).unwrap();
    let resource = format!(
        "tcp {} -> {}",
        stream.local_addr().unwrap(),
        stream.peer_addr().unwrap()
    );
    let reader = executor
        .try_spawn_named("uplink", async move {
            let mut buf = [0u8; 3];
            read_full(&stream, &mut buf).await.map(|()| buf)
        })
        .unwrap_or_else(|_| unreachable!());
    executor.tick(usize::MAX);
    let thresholds = Thresholds {
        no_wake: Duration::from_secs(1),
        ..Thresholds::default()
    };
    assert_eq!(monitor.diagnose(&thresholds), []);
    clock.advance(Duration::from_secs(2));
    let verdicts = monitor.diagnose(&thresholds);
    assert_eq!(
        verdicts,
        [Verdict::NoWake {
            task: reader.id(),
            name: Some("uplink"),
            waiting: Duration::from_secs(2),
            polls: 1,
            waits_on: Some(IoWait {
                resource: resource.as_str().into(),
                interest: Interest::Read,
            }),
            waits_for: None,
        }]
    );
    assert!(
        verdicts[0]
            .to_string()
            .ends_with(&format!("no readiness to read on {resource}")),
        "{}",
        verdicts[0]
    );
    // Readiness comes: the task is woken and reads.
    peer.write_all(b"abc").unwrap();
    assert_eq!(&executor.block_on(reader).unwrap().unwrap(), b"abc");
    assert_eq!(monitor.diagnose(&thresholds), []);
    let mut rest = Vec::new();
    peer.shutdown(Shutdown::Write).unwrap();
    let _ = peer.read_to_end(&mut rest);
}

#[test]
fn futures_io_codecs_run_on_a_stream() {
    use futures_util::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let executor = LocalExecutor::new();
    let listener = TcpListener::bind(loopback()).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = executor
        .try_spawn(async move {
            let (stream, _) = listener.accept().await?;
            let mut lines = BufReader::new(&stream).lines();
            let mut count = 0u32;
            let mut writer = &stream;
            while let Some(line) = futures_util::StreamExt::next(&mut lines).await {
                let line = line?;
                count += 1;
                writer
                    .write_all(format!("{count}:{}\n", line.to_uppercase()).as_bytes())
                    .await?;
            }
            writer.close().await?;
            Ok::<u32, std::io::Error>(count)
        })
        .unwrap_or_else(|_| unreachable!());
    let reply = executor.block_on(async {
        let mut client = TcpStream::connect(addr).await.unwrap();
        client.write_all(b"one\ntwo\nthree\n").await.unwrap();
        client.close().await.unwrap();
        let mut reply = String::new();
        client.read_to_string(&mut reply).await.unwrap();
        reply
    });
    assert_eq!(reply, "1:ONE\n2:TWO\n3:THREE\n");
    assert_eq!(executor.block_on(server).unwrap().unwrap(), 3);
}

#[test]
fn readiness_held_while_a_poll_blocks_the_thread_is_ready_behind_it_not_no_wake() {
    let clock = ManualClock::new();
    let (to_test, from_relay) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let relay_clock = clock.clone();
    let relay = thread::spawn(move || {
        let executor = LocalExecutor::with_telemetry(
            ExecutorConfig::default(),
            TelemetryConfig::new().with_clock(relay_clock),
        )
        .unwrap();
        let listener = TcpListener::bind(loopback()).unwrap();
        let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (stream, _) = executor.block_on(listener.accept()).unwrap();
        let reader = executor
            .try_spawn_named("reader", async move {
                let mut buf = [0u8; 2];
                read_full(&stream, &mut buf).await.map(|()| buf)
            })
            .unwrap_or_else(|_| unreachable!());
        executor.tick(usize::MAX);
        let ready_tx = to_test.clone();
        let hog = executor
            .try_spawn_named("hog", async move {
                // A blocking call inside a poll: the thread is held until
                // the test lets go.
                ready_tx.send(None).unwrap();
                released.recv().unwrap();
                Ok::<(), ()>(())
            })
            .unwrap_or_else(|_| unreachable!());
        to_test
            .send(Some((executor.monitor(), peer, reader.id(), hog.id())))
            .unwrap();
        executor.block_on(async {
            hog.await.unwrap().unwrap();
            assert_eq!(&reader.await.unwrap().unwrap(), b"hi");
        });
    });
    let (monitor, mut peer, reader, hog) = from_relay.recv().unwrap().unwrap();
    assert!(
        from_relay.recv().unwrap().is_none(),
        "the hog holds the thread"
    );
    // The reader's socket becomes ready while the thread is held.
    peer.write_all(b"hi").unwrap();
    let thresholds = Thresholds {
        no_wake: Duration::from_secs(1),
        ready_delay: Duration::from_millis(10),
        blocked: Duration::from_millis(100),
        ..Thresholds::default()
    };
    // The readiness reaches the reader through the monitor's look at the
    // reactor (the OS delivers it there; the loop ends as soon as it has).
    for _ in 0..1_000 {
        let _ = monitor.diagnose(&thresholds);
        if monitor.io().events > 0 {
            break;
        }
        thread::yield_now();
    }
    clock.advance(Duration::from_secs(2));
    let verdicts = monitor.diagnose(&thresholds);
    assert!(
        matches!(
            verdicts.as_slice(),
            [Verdict::WorkerBlocked { task, ready_behind: 1, .. }] if *task == hog
        ),
        "the reader ({reader:?}) is ready behind the hog, not NoWake: {verdicts:?}"
    );
    release.send(()).unwrap();
    relay.join().unwrap();
}
