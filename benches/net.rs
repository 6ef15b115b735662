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
//!   `examples/support/hyper_rt.rs`) and on tokio (the same kind of
//!   adapter, copying through the same size of buffer).
//! - `hyper_requests_multi`: the same server on dinah's `MultiExecutor` and
//!   tokio's multi-thread runtime (2 workers each, or `--workers N`),
//!   serving 16 kept-alive connections at once, 250 requests each, from
//!   hyper's client on the same runtime: requests per second.
//!
//! `cargo bench --bench net [-- FILTER] [--samples N]`; `--callgrind
//! CONTENDER TIMES` runs one contender's workload untimed (for `strace -c
//! -f`, which counts its system calls) and exits.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

mod harness;
use harness::{Contender, Options, run_case, target};

#[path = "../examples/support/hyper_rt.rs"]
mod hyper_rt;

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
    let results = run_case(name, 1, options.samples, &mut contenders);
    let ratio = results[1].1.as_secs_f64() / results[0].1.as_secs_f64();
    target(
        &format!(
            "{name} on {workers} worker(s): dinah round trips per second / tokio multi_thread's (at least 1.0)"
        ),
        ratio,
        ratio >= 1.0,
    );
}

/// hyper's I/O traits over a tokio stream, as `hyper_rt::HyperIo` does
/// over dinah's: a 4 KiB buffer and one copy per read.
struct TokioIo(tokio::net::TcpStream);

impl hyper::rt::Read for TokioIo {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let mut chunk = [0u8; 4096];
        let room = buf.remaining().min(chunk.len());
        let mut read = tokio::io::ReadBuf::new(&mut chunk[..room]);
        match tokio::io::AsyncRead::poll_read(std::pin::Pin::new(&mut self.0), cx, &mut read) {
            std::task::Poll::Ready(Ok(())) => {
                buf.put_slice(read.filled());
                std::task::Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl hyper::rt::Write for TokioIo {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        tokio::io::AsyncWrite::poll_write(std::pin::Pin::new(&mut self.0), cx, buf)
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        tokio::io::AsyncWrite::poll_shutdown(std::pin::Pin::new(&mut self.0), cx)
    }
}

const REQUESTS: usize = 2_000;

async fn hello(
    _: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<http_body_util::Full<hyper::body::Bytes>>, std::convert::Infallible> {
    Ok(hyper::Response::new(http_body_util::Full::new(
        hyper::body::Bytes::from_static(b"hello"),
    )))
}

/// hyper's client side of one connection.
type Sender = hyper::client::conn::http1::SendRequest<http_body_util::Empty<hyper::body::Bytes>>;

/// `REQUESTS` requests over `sender`: the time per request.
async fn requests(sender: &mut Sender, addr: SocketAddr) -> Duration {
    requests_n(sender, addr, REQUESTS).await
}

/// `count` requests over `sender`, each answered before the next: the
/// time per request.
async fn requests_n(sender: &mut Sender, addr: SocketAddr, count: usize) -> Duration {
    use http_body_util::BodyExt;
    let start = Instant::now();
    for _ in 0..count {
        let request = hyper::Request::get("/")
            .header("host", addr.to_string())
            .body(http_body_util::Empty::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"hello");
    }
    start.elapsed() / count as u32
}

fn dinah_hyper() -> Duration {
    use dinah::net::{TcpListener, TcpStream};
    use hyper_rt::HyperIo;
    let executor = dinah::LocalExecutor::new();
    let listener = TcpListener::bind(loopback()).unwrap();
    let addr = listener.local_addr().unwrap();
    drop(
        executor
            .try_spawn(async move {
                let (stream, _) = listener.accept().await?;
                stream.set_nodelay(true)?;
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(HyperIo(stream), hyper::service::service_fn(hello))
                    .await;
                Ok::<(), std::io::Error>(())
            })
            .unwrap_or_else(|_| unreachable!()),
    );
    let spawner = executor.local_spawner();
    executor.block_on(async {
        let stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(HyperIo(stream))
            .await
            .unwrap();
        drop(
            spawner
                .try_spawn(async move { connection.await.map_err(|_| ()) })
                .unwrap_or_else(|_| unreachable!()),
        );
        requests(&mut sender, addr).await
    })
}

/// hyper's client on a new connection to `addr`, its connection driven by
/// a task of the current tokio runtime.
async fn tokio_client(addr: SocketAddr) -> Sender {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

/// hyper's server on one accepted connection, until the client leaves.
async fn tokio_serve(stream: tokio::net::TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo(stream), hyper::service::service_fn(hello))
        .await;
    Ok(())
}

fn tokio_hyper() -> Duration {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(loopback()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await?;
            tokio_serve(stream).await
        });
        let mut sender = tokio_client(addr).await;
        requests(&mut sender, addr).await
    })
}

fn hyper_case(options: &Options) {
    if !options.wants("hyper_requests") {
        return;
    }
    let mut contenders = vec![
        Contender::new("dinah + hyper", false, dinah_hyper),
        Contender::new("tokio current-thread + hyper", true, tokio_hyper),
    ];
    let results = run_case("hyper_requests", 1, options.samples, &mut contenders);
    let ratio = results[1].1.as_secs_f64() / results[0].1.as_secs_f64();
    println!(
        "hyper_requests: dinah requests per second / tokio's: {ratio:.3} (recorded; no target)"
    );
}

/// Connections and requests on each, of `hyper_requests_multi`.
const HYPER_CONNECTIONS: usize = 16;
const HYPER_EACH: usize = 250;

fn dinah_hyper_multi(workers: usize) -> Duration {
    use dinah::net::TcpStream;
    use hyper_rt::HyperIo;
    let (executor, handle, listener) = dinah_multi(workers);
    let addr = listener.local_addr().unwrap();
    let server = handle.clone();
    drop(
        handle
            .try_spawn(async move {
                loop {
                    let (stream, _) = listener.accept().await?;
                    stream.set_nodelay(true)?;
                    drop(
                        server
                            .try_spawn(async move {
                                let _ = hyper::server::conn::http1::Builder::new()
                                    .serve_connection(
                                        HyperIo(stream),
                                        hyper::service::service_fn(hello),
                                    )
                                    .await;
                            })
                            .unwrap_or_else(|_| unreachable!()),
                    );
                }
                #[allow(unreachable_code)]
                Ok::<(), std::io::Error>(())
            })
            .unwrap_or_else(|_| unreachable!()),
    );
    executor.block_on(async {
        let mut senders = Vec::with_capacity(HYPER_CONNECTIONS);
        for _ in 0..HYPER_CONNECTIONS {
            let stream = TcpStream::connect(addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (sender, connection) = hyper::client::conn::http1::handshake(HyperIo(stream))
                .await
                .unwrap();
            drop(
                handle
                    .try_spawn(async move { connection.await.map_err(|_| ()) })
                    .unwrap_or_else(|_| unreachable!()),
            );
            senders.push(sender);
        }
        let start = Instant::now();
        let clients: Vec<_> = senders
            .into_iter()
            .map(|mut sender| {
                handle
                    .try_spawn(async move {
                        requests_n(&mut sender, addr, HYPER_EACH).await;
                        Ok::<(), ()>(())
                    })
                    .unwrap_or_else(|_| unreachable!())
            })
            .collect();
        for client in clients {
            client.await.unwrap().unwrap();
        }
        start.elapsed() / (HYPER_CONNECTIONS * HYPER_EACH) as u32
    })
}

fn tokio_hyper_multi(workers: usize) -> Duration {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_io()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(loopback()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await?;
                tokio::spawn(tokio_serve(stream));
            }
            #[allow(unreachable_code)]
            Ok::<(), std::io::Error>(())
        });
        let mut senders = Vec::with_capacity(HYPER_CONNECTIONS);
        for _ in 0..HYPER_CONNECTIONS {
            senders.push(tokio_client(addr).await);
        }
        let start = Instant::now();
        let clients: Vec<_> = senders
            .into_iter()
            .map(|mut sender| {
                tokio::spawn(async move {
                    requests_n(&mut sender, addr, HYPER_EACH).await;
                })
            })
            .collect();
        for client in clients {
            client.await.unwrap();
        }
        start.elapsed() / (HYPER_CONNECTIONS * HYPER_EACH) as u32
    })
}

fn hyper_multi_case(options: &Options) {
    let name = "hyper_requests_multi";
    if !options.wants(name) {
        return;
    }
    let workers = options.workers.unwrap_or(2);
    let mut contenders = vec![
        Contender::new(
            format!("dinah MultiExecutor ({workers}) + hyper"),
            false,
            || dinah_hyper_multi(workers),
        ),
        Contender::new(
            format!("tokio multi_thread ({workers}) + hyper"),
            true,
            || tokio_hyper_multi(workers),
        ),
    ];
    let results = run_case(name, 1, options.samples, &mut contenders);
    let ratio = results[1].1.as_secs_f64() / results[0].1.as_secs_f64();
    target(
        &format!(
            "{name} on {workers} worker(s): dinah requests per second / tokio multi_thread's (at least 1.0)"
        ),
        ratio,
        ratio >= 1.0,
    );
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
                "dinah-hyper-multi" => dinah_hyper_multi(options.workers.unwrap_or(2)),
                "tokio-hyper-multi" => tokio_hyper_multi(options.workers.unwrap_or(2)),
                other => panic!(
                    "no contender {other}: dinah, tokio, dinah-hyper-multi or tokio-hyper-multi"
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
    multi_case(
        &options,
        Load {
            connections: 100,
            trips: 100,
        },
    );
    hyper_case(&options);
    hyper_multi_case(&options);
}
