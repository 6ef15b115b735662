//! TCP echo over loopback: dinah's `LocalExecutor` and its reactor beside
//! tokio's current-thread runtime, in the same rounds.
//!
//! Each contender runs the same protocol with its own sockets: a server
//! task accepts and spawns one echo task per connection; client tasks on
//! the same runtime each write 64 bytes and read them back, again and
//! again. Connections are made before the clock starts; the time is per
//! round trip.
//!
//! - `tcp_echo_1`: one connection, 4,000 round trips;
//! - `tcp_echo_100`: 100 connections at once, 100 round trips each.
//!
//! `cargo bench --bench net [-- FILTER] [--samples N]`; `--callgrind
//! CONTENDER TIMES` runs one contender's workload untimed (for `strace -c
//! -f`, which counts its system calls) and exits.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

mod harness;
use harness::{Contender, Options, run_case, target};

const MESSAGE: usize = 64;

/// One workload: `connections` clients, `trips` round trips each.
#[derive(Clone, Copy)]
struct Load {
    connections: usize,
    trips: usize,
}

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn dinah_echo(load: Load) -> Duration {
    use dinah::net::{TcpListener, TcpStream};
    let executor = dinah::LocalExecutor::new();
    let listener = TcpListener::bind(loopback()).unwrap();
    let addr = listener.local_addr().unwrap();
    let spawner = executor.local_spawner();
    drop(
        executor
            .try_spawn(async move {
                loop {
                    let (stream, _) = listener.accept().await?;
                    stream.set_nodelay(true)?;
                    drop(
                        spawner
                            .try_spawn(async move {
                                let mut buf = [0u8; MESSAGE];
                                loop {
                                    let n = stream.read(&mut buf).await?;
                                    if n == 0 {
                                        return Ok::<(), std::io::Error>(());
                                    }
                                    stream.write_all(&buf[..n]).await?;
                                }
                            })
                            .unwrap_or_else(|_| unreachable!()),
                    );
                }
                #[allow(unreachable_code)]
                Ok::<(), std::io::Error>(())
            })
            .unwrap_or_else(|_| unreachable!()),
    );
    let clients: Vec<TcpStream> = executor.block_on(async {
        let mut clients = Vec::new();
        for _ in 0..load.connections {
            let client = TcpStream::connect(addr).await.unwrap();
            client.set_nodelay(true).unwrap();
            clients.push(client);
        }
        clients
    });
    let start = Instant::now();
    let handles: Vec<_> = clients
        .into_iter()
        .map(|client| {
            executor
                .try_spawn(async move {
                    let message = [7u8; MESSAGE];
                    let mut back = [0u8; MESSAGE];
                    for _ in 0..load.trips {
                        client.write_all(&message).await?;
                        let mut got = 0;
                        while got < MESSAGE {
                            got += client.read(&mut back[got..]).await?;
                        }
                    }
                    Ok::<(), std::io::Error>(())
                })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    executor.block_on(async {
        for handle in handles {
            handle.await.unwrap().unwrap();
        }
    });
    let elapsed = start.elapsed();
    elapsed / (load.connections * load.trips) as u32
}

fn tokio_echo(load: Load) -> Duration {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listener = TcpListener::bind(loopback()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await?;
                stream.set_nodelay(true)?;
                tokio::spawn(async move {
                    let mut buf = [0u8; MESSAGE];
                    loop {
                        let n = stream.read(&mut buf).await?;
                        if n == 0 {
                            return Ok::<(), std::io::Error>(());
                        }
                        stream.write_all(&buf[..n]).await?;
                    }
                });
            }
            #[allow(unreachable_code)]
            Ok::<(), std::io::Error>(())
        });
        let mut clients = Vec::new();
        for _ in 0..load.connections {
            let client = TcpStream::connect(addr).await.unwrap();
            client.set_nodelay(true).unwrap();
            clients.push(client);
        }
        let start = Instant::now();
        let handles: Vec<_> = clients
            .into_iter()
            .map(|mut client| {
                tokio::spawn(async move {
                    let message = [7u8; MESSAGE];
                    let mut back = [0u8; MESSAGE];
                    for _ in 0..load.trips {
                        client.write_all(&message).await?;
                        client.read_exact(&mut back).await?;
                    }
                    Ok::<(), std::io::Error>(())
                })
            })
            .collect();
        for handle in handles {
            handle.await.unwrap().unwrap();
        }
        start.elapsed() / (load.connections * load.trips) as u32
    })
}

fn case(options: &Options, name: &str, load: Load) {
    if !options.wants(name) {
        return;
    }
    let mut contenders = vec![
        Contender::new("dinah LocalExecutor + reactor", false, || dinah_echo(load)),
        Contender::new("tokio current-thread", true, || tokio_echo(load)),
    ];
    // One "task" is one round trip.
    let results = run_case(name, 1, options.samples, &mut contenders);
    // Time per round trip: the ratio of round trips per second is its
    // inverse.
    let ratio = results[1].1.as_secs_f64() / results[0].1.as_secs_f64();
    target(
        &format!("{name}: dinah round trips per second / tokio's (at least 1.0)"),
        ratio,
        ratio >= 1.0,
    );
}

fn main() {
    let options = Options::from_args();
    if let Some((contender, times)) = &options.callgrind {
        let load = Load {
            connections: 1,
            trips: 10_000,
        };
        for _ in 0..*times {
            match contender.as_str() {
                "dinah" => dinah_echo(load),
                "tokio" => tokio_echo(load),
                other => panic!("no contender {other}: dinah or tokio"),
            };
        }
        return;
    }
    case(
        &options,
        "tcp_echo_1",
        Load {
            connections: 1,
            trips: 4_000,
        },
    );
    case(
        &options,
        "tcp_echo_100",
        Load {
            connections: 100,
            trips: 100,
        },
    );
}
