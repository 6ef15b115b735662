//! The hyper cases of `benches/net.rs`: hyper 1.x on dinah's sockets
//! (through `dinah-hyper`'s `HyperIo`) and on tokio's (through
//! hyper-util's `TokioIo`, as tokio's users run it), on the current-thread
//! executors and on the multi-thread ones.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::harness::{Contender, Options, run_case, target};
use dinah_hyper::HyperIo;
use hyper_util::rt::TokioIo;

use super::{dinah_multi, loopback, rate_ratio};

const REQUESTS: usize = 2_000;

pub(crate) async fn hello(
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
    let executor = dinah::LocalExecutor::new();
    let listener = TcpListener::bind(loopback()).unwrap();
    let addr = listener.local_addr().unwrap();
    drop(
        executor
            .try_spawn(async move {
                let (stream, _) = listener.accept().await?;
                stream.set_nodelay(true)?;
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(HyperIo::new(stream), hyper::service::service_fn(hello))
                    .await;
                Ok::<(), std::io::Error>(())
            })
            .unwrap_or_else(|_| unreachable!()),
    );
    let spawner = executor.local_spawner();
    executor.block_on(async {
        let stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(HyperIo::new(stream))
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
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

/// hyper's server on one accepted connection, until the client leaves.
async fn tokio_serve(stream: tokio::net::TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), hyper::service::service_fn(hello))
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

pub(crate) fn hyper_case(options: &Options) {
    if !options.wants("hyper_requests") {
        return;
    }
    let mut contenders = vec![
        Contender::new("dinah + hyper", false, dinah_hyper),
        Contender::new("tokio current-thread + hyper", true, tokio_hyper),
    ];
    let ratio = rate_ratio(&run_case(
        "hyper_requests",
        1,
        options.samples,
        &mut contenders,
    ));
    println!(
        "hyper_requests: dinah requests per second / tokio's: {ratio:.3} (recorded; no target)"
    );
}

/// Connections and requests on each, of `hyper_requests_multi`.
const HYPER_CONNECTIONS: usize = 16;
const HYPER_EACH: usize = 250;

pub(crate) fn dinah_hyper_multi(workers: usize) -> Duration {
    use dinah::net::TcpStream;
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
                                        HyperIo::new(stream),
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
            let (sender, connection) = hyper::client::conn::http1::handshake(HyperIo::new(stream))
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

pub(crate) fn tokio_hyper_multi(workers: usize) -> Duration {
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

pub(crate) fn hyper_multi_case(options: &Options) {
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
    let ratio = rate_ratio(&run_case(name, 1, options.samples, &mut contenders));
    target(
        &format!(
            "{name} on {workers} worker(s): dinah requests per second / tokio multi_thread's (at least 1.0)"
        ),
        ratio,
        ratio >= 1.0,
    );
}
