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
//! - `tcp_echo_100`: 100 connections at once, 100 round trips each;
//! - `tcp_echo_100_multi`: the same 100 connections on dinah's
//!   `MultiExecutor` and tokio's multi-thread runtime, 2 workers each (1
//!   with `--workers 1`);
//! - `hyper_requests`: hyper 1.x serving 2,000 small requests from hyper's
//!   client over one kept-alive connection, on dinah (its sockets through
//!   `dinah-hyper`'s `HyperIo`, which copies each read out of a kept 4 KiB
//!   buffer) and on tokio (hyper-util's `TokioIo`, which reads into hyper's
//!   buffer directly).
//! - `hyper_requests_multi`: the same server on dinah's `MultiExecutor` and
//!   tokio's multi-thread runtime (2 workers each, or `--workers N`),
//!   serving 16 kept-alive connections at once, 250 requests each, from
//!   hyper's client on the same runtime: requests per second.
//!
//! `--serve dinah|tokio ADDR SECONDS` runs only the hyper server, for `wrk`
//! (`benches/http_wrk.sh`).
//!
//! `cargo bench --bench net [-- FILTER] [--samples N]`; `--callgrind
//! CONTENDER TIMES` runs one contender's workload untimed (for `strace -c
//! -f`, which counts its system calls) and exits.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

mod harness;
use harness::{Contender, Options, run_case, target};

#[path = "net_hyper.rs"]
mod net_hyper;
#[path = "net_serve.rs"]
mod net_serve;
use net_hyper::{dinah_hyper_multi, hyper_case, hyper_multi_case, tokio_hyper_multi};

const MESSAGE: usize = 64;
/// The multi-thread echo's workload: 100 connections at once, 100 round
/// trips each.
const MULTI_LOAD: Load = Load {
    connections: 100,
    trips: 100,
};

/// One workload: `connections` clients, `trips` round trips each.
#[derive(Clone, Copy)]
struct Load {
    connections: usize,
    trips: usize,
}

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// The echo server on dinah: one task per connection, spawned by `spawn`.
async fn dinah_echo_server(
    listener: dinah::net::TcpListener,
    spawn: impl Fn(std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>),
) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        spawn(Box::pin(async move {
            let mut buf = [0u8; MESSAGE];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if stream.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }));
    }
}

/// One echo client on dinah: `trips` round trips of 64 bytes.
async fn dinah_echo_client(client: dinah::net::TcpStream, trips: usize) -> std::io::Result<()> {
    let message = [7u8; MESSAGE];
    let mut back = [0u8; MESSAGE];
    for _ in 0..trips {
        client.write_all(&message).await?;
        let mut got = 0;
        while got < MESSAGE {
            got += client.read(&mut back[got..]).await?;
        }
    }
    Ok(())
}

/// Connects `load.connections` clients on dinah.
async fn dinah_connect(addr: SocketAddr, load: Load) -> Vec<dinah::net::TcpStream> {
    let mut clients = Vec::new();
    for _ in 0..load.connections {
        let client = dinah::net::TcpStream::connect(addr).await.unwrap();
        client.set_nodelay(true).unwrap();
        clients.push(client);
    }
    clients
}

/// One client's round trips, as a task either executor runs.
type Client = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>> + Send>>;

/// Times the clients' round trips on dinah, each a task `spawn` makes,
/// all awaited through `wait`: the time per round trip.
fn dinah_round_trips(
    clients: Vec<dinah::net::TcpStream>,
    load: Load,
    spawn: impl Fn(Client) -> dinah::JoinHandle<std::io::Result<()>>,
    wait: impl FnOnce(std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>>),
) -> Duration {
    let start = Instant::now();
    let handles: Vec<_> = clients
        .into_iter()
        .map(|client| spawn(Box::pin(dinah_echo_client(client, load.trips))))
        .collect();
    wait(Box::pin(async {
        for handle in handles {
            handle.await.unwrap().unwrap();
        }
    }));
    start.elapsed() / (load.connections * load.trips) as u32
}

fn dinah_echo(load: Load) -> Duration {
    use dinah::net::TcpListener;
    let executor = dinah::LocalExecutor::new();
    let listener = TcpListener::bind(loopback()).unwrap();
    let addr = listener.local_addr().unwrap();
    let spawner = executor.local_spawner();
    let server = dinah_echo_server(listener, move |task| {
        drop(spawner.try_spawn(task).unwrap_or_else(|_| unreachable!()));
    });
    drop(
        executor
            .try_spawn(server)
            .unwrap_or_else(|_| unreachable!()),
    );
    let clients = executor.block_on(dinah_connect(addr, load));
    dinah_round_trips(
        clients,
        load,
        |client| {
            executor
                .try_spawn(client)
                .unwrap_or_else(|_| unreachable!())
        },
        |all| executor.block_on(all),
    )
}

fn tokio_echo(load: Load) -> Duration {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    tokio_echo_on(&runtime, load)
}

/// The echo workload on a tokio runtime.
fn tokio_echo_on(runtime: &tokio::runtime::Runtime, load: Load) -> Duration {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
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

/// A `MultiExecutor` of `workers` workers, its handle, and a listener
/// registered with its reactor.
fn dinah_multi(
    workers: usize,
) -> (
    dinah::executor::MultiExecutor,
    dinah::executor::MultiHandle,
    dinah::net::TcpListener,
) {
    use dinah::executor::{MultiConfig, MultiExecutor};
    let executor = MultiExecutor::with_config(MultiConfig {
        workers: Some(workers),
        ..MultiConfig::default()
    })
    .unwrap();
    let handle = executor.handle();
    let listener = executor
        .block_on(async { dinah::net::TcpListener::bind(loopback()) })
        .unwrap();
    (executor, handle, listener)
}

fn dinah_multi_echo(load: Load, workers: usize) -> Duration {
    let (executor, handle, listener) = dinah_multi(workers);
    let addr = listener.local_addr().unwrap();
    let spawner = handle.clone();
    let server = dinah_echo_server(listener, move |task| {
        drop(spawner.try_spawn(task).unwrap_or_else(|_| unreachable!()));
    });
    drop(handle.try_spawn(server).unwrap_or_else(|_| unreachable!()));
    let clients = executor.block_on(dinah_connect(addr, load));
    dinah_round_trips(
        clients,
        load,
        |client| handle.try_spawn(client).unwrap_or_else(|_| unreachable!()),
        |all| executor.block_on(all),
    )
}

fn tokio_multi_echo(load: Load, workers: usize) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_io()
        .build()
        .unwrap();
    tokio_echo_on(&runtime, load)
}

fn multi_case(options: &Options, load: Load) {
    let name = "tcp_echo_100_multi";
    if !options.wants(name) {
        return;
    }
    let workers = options.workers.unwrap_or(2);
    let mut contenders = vec![
        Contender::new(format!("dinah MultiExecutor ({workers})"), false, || {
            dinah_multi_echo(load, workers)
        }),
        Contender::new(format!("tokio multi_thread ({workers})"), true, || {
            tokio_multi_echo(load, workers)
        }),
    ];
    let ratio = rate_ratio(&run_case(name, 1, options.samples, &mut contenders));
    target(
        &format!(
            "{name} on {workers} worker(s): dinah round trips per second / tokio multi_thread's (at least 1.0)"
        ),
        ratio,
        ratio >= 1.0,
    );
}

/// dinah's operations per second over its peer's, from a case's medians
/// (dinah first, the peer second): the inverse of the ratio of their times
/// per operation.
pub(crate) fn rate_ratio(results: &[(String, Duration)]) -> f64 {
    results[1].1.as_secs_f64() / results[0].1.as_secs_f64()
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
    let ratio = rate_ratio(&run_case(name, 1, options.samples, &mut contenders));
    target(
        &format!("{name}: dinah round trips per second / tokio's (at least 1.0)"),
        ratio,
        ratio >= 1.0,
    );
}

fn main() {
    if net_serve::serve_if_asked() {
        return;
    }
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
                "dinah-multi" => dinah_multi_echo(MULTI_LOAD, options.workers.unwrap_or(2)),
                "tokio-multi" => tokio_multi_echo(MULTI_LOAD, options.workers.unwrap_or(2)),
                "dinah-hyper-multi" => dinah_hyper_multi(options.workers.unwrap_or(2)),
                "tokio-hyper-multi" => tokio_hyper_multi(options.workers.unwrap_or(2)),
                other => panic!(
                    "no contender {other}: dinah, tokio, dinah-multi, tokio-multi, dinah-hyper-multi or tokio-hyper-multi"
                ),
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
    multi_case(&options, MULTI_LOAD);
    hyper_case(&options);
    hyper_multi_case(&options);
}
