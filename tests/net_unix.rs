//! Unix domain sockets on the reactor: streams through a listener and as
//! a pair, the `futures-io` traits, datagrams by path and as a pair, the
//! OS's errors passed through, deregistration on drop, and a task waiting
//! on a quiet stream named in the diagnosis. Socket files live in a
//! directory of the test's own under the system's temporary directory.
//! Not under Miri, which has no Unix domain sockets.
#![cfg(all(unix, not(miri)))]

use std::io;
use std::time::Duration;

use dinah::LocalExecutor;
use dinah::executor::{ExecutorConfig, MultiConfig, MultiExecutor};
use dinah::io::{Interest, IoWait};
use dinah::net::{UnixDatagram, UnixListener, UnixStream};
use dinah::telemetry::{ManualClock, TelemetryConfig, Thresholds, Verdict};

mod support;
use support::temp_dir::TempDir as Dir;

/// Reads exactly `buf.len()` bytes.
async fn read_full(stream: &UnixStream, buf: &mut [u8]) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        let n = stream.read(&mut buf[got..]).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        got += n;
    }
    Ok(())
}

#[test]
fn a_stream_through_a_listener_echoes_and_deregisters_when_dropped() {
    let dir = Dir::new("echo");
    let path = dir.path("echo.sock");
    let executor = LocalExecutor::new();
    let listener = UnixListener::bind(&path).unwrap();
    assert_eq!(
        listener.local_addr().unwrap().as_pathname(),
        Some(path.as_path())
    );
    let server = executor
        .try_spawn(async move {
            let (stream, _) = listener.accept().await?;
            let mut buf = [0u8; 64];
            loop {
                let n = stream.read(&mut buf).await?;
                if n == 0 {
                    return Ok::<(), io::Error>(());
                }
                stream.write_all(&buf[..n]).await?;
            }
        })
        .unwrap_or_else(|_| unreachable!());
    let echoed = executor.block_on(async {
        let client = UnixStream::connect(&path).await?;
        assert_eq!(client.peer_addr()?.as_pathname(), Some(path.as_path()));
        // More than one read's worth, in several writes.
        let message: Vec<u8> = (0..1_000u32).map(|i| (i % 251) as u8).collect();
        for chunk in message.chunks(300) {
            client.write_all(chunk).await?;
        }
        let mut back = vec![0u8; message.len()];
        read_full(&client, &mut back).await?;
        client.shutdown(std::net::Shutdown::Write)?;
        server.await.unwrap()?;
        Ok::<_, io::Error>(back == message)
    });
    assert!(echoed.unwrap(), "the echo came back whole and in order");
    assert_eq!(executor.io_figures().live, 0, "every socket deregistered");
}

#[test]
fn multi_executor_pair_talks_both_ways_through_futures_io() {
    use futures_util::io::{AsyncReadExt, AsyncWriteExt};
    let executor = MultiExecutor::with_config(MultiConfig {
        workers: Some(2),
        ..MultiConfig::default()
    })
    .unwrap();
    let (a, b) = executor.block_on(async { UnixStream::pair() }).unwrap();
    let handle = executor.handle();
    let other = handle
        .try_spawn(async move {
            let mut b = b;
            let mut question = [0u8; 4];
            b.read_exact(&mut question).await?;
            AsyncWriteExt::write_all(&mut b, b"pong").await?;
            Ok::<_, io::Error>(question)
        })
        .unwrap_or_else(|_| unreachable!());
    let (question, answer) = executor
        .block_on(async move {
            let mut a = a;
            AsyncWriteExt::write_all(&mut a, b"ping").await?;
            let mut answer = [0u8; 4];
            a.read_exact(&mut answer).await?;
            Ok::<_, io::Error>((other.await.unwrap()?, answer))
        })
        .unwrap();
    assert_eq!((&question, &answer), (b"ping", b"pong"));
}

#[test]
fn datagrams_go_by_path_and_between_a_pair_whole_and_in_order() {
    let dir = Dir::new("datagram");
    let executor = LocalExecutor::new();
    executor
        .block_on(async {
            let server = UnixDatagram::bind(dir.path("server.sock"))?;
            let client = UnixDatagram::bind(dir.path("client.sock"))?;
            for n in 0..3u8 {
                assert_eq!(client.send_to(&[n; 5], dir.path("server.sock")).await?, 5);
            }
            let mut buf = [0u8; 16];
            for n in 0..3u8 {
                let (len, from) = server.recv_from(&mut buf).await?;
                assert_eq!(&buf[..len], &[n; 5]);
                assert_eq!(from.as_pathname(), Some(dir.path("client.sock").as_path()));
            }
            // A reply on a connected socket.
            server.connect(dir.path("client.sock"))?;
            server.send(b"ok").await?;
            assert_eq!(client.recv(&mut buf).await?, 2);
            // A pair, and an unbound socket that sends.
            let (a, b) = UnixDatagram::pair()?;
            a.send(b"one").await?;
            a.send(b"two").await?;
            assert_eq!(b.recv(&mut buf).await?, 3);
            assert_eq!(&buf[..3], b"one");
            assert_eq!(b.recv(&mut buf).await?, 3);
            assert_eq!(&buf[..3], b"two");
            // (The server is connected now, so it takes datagrams from its
            // peer only: the unbound socket writes to the client.)
            let unbound = UnixDatagram::unbound()?;
            unbound.send_to(b"anon", dir.path("client.sock")).await?;
            let (len, from) = client.recv_from(&mut buf).await?;
            assert_eq!((&buf[..len], from.as_pathname()), (&b"anon"[..], None));
            Ok::<(), io::Error>(())
        })
        .unwrap();
}

#[test]
fn the_operating_systems_errors_come_through_typed() {
    let dir = Dir::new("errors");
    let executor = LocalExecutor::new();
    executor.block_on(async {
        let missing = UnixStream::connect(dir.path("nobody.sock"))
            .await
            .unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound, "{missing}");
        let _listener = UnixListener::bind(dir.path("taken.sock")).unwrap();
        let taken = UnixListener::bind(dir.path("taken.sock")).unwrap_err();
        assert_eq!(taken.kind(), io::ErrorKind::AddrInUse, "{taken}");
    });
    // Without an executor there is no reactor to register with.
    std::thread::spawn(|| {
        let error = UnixStream::pair().unwrap_err();
        assert!(error.to_string().contains("executor"), "{error}");
    })
    .join()
    .unwrap();
}

#[test]
fn a_task_waiting_on_a_quiet_unix_stream_is_no_wake_naming_it() {
    let dir = Dir::new("quiet");
    let path = dir.path("quiet.sock");
    let clock = ManualClock::new();
    let executor = LocalExecutor::with_telemetry(
        ExecutorConfig::default(),
        TelemetryConfig::new().with_clock(clock.clone()),
    )
    .unwrap();
    let monitor = executor.monitor();
    let listener = UnixListener::bind(&path).unwrap();
    let peer = std::os::unix::net::UnixStream::connect(&path).unwrap();
    let (stream, _) = executor.block_on(listener.accept()).unwrap();
    let reader = executor
        .try_spawn_named("sidecar", async move {
            let mut buf = [0u8; 1];
            read_full(&stream, &mut buf).await
        })
        .unwrap_or_else(|_| unreachable!());
    executor.tick(usize::MAX);
    let thresholds = Thresholds {
        no_wake: Duration::from_secs(1),
        ..Thresholds::default()
    };
    clock.advance(Duration::from_secs(2));
    let resource = format!("unix {}", path.display());
    assert_eq!(
        monitor.diagnose(&thresholds),
        [Verdict::NoWake {
            task: reader.id(),
            name: Some("sidecar"),
            waiting: Duration::from_secs(2),
            polls: 1,
            waits_on: Some(IoWait {
                resource: resource.as_str().into(),
                interest: Interest::Read,
            }),
            waits_for: None,
        }]
    );
    std::io::Write::write_all(&mut &peer, b"x").unwrap();
    executor.block_on(reader).unwrap().unwrap();
    assert_eq!(monitor.diagnose(&thresholds), []);
}
