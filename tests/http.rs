//! hyper 1.x over dinah's sockets, executor and timers, on loopback: a
//! server and a client on one executor, keep-alive, and a header-read
//! timeout on a paused clock.

use std::convert::Infallible;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};

use dinah::LocalExecutor;
use dinah::executor::ExecutorConfig;
use dinah::net::{TcpListener, TcpStream};

#[path = "../examples/support/hyper_rt.rs"]
mod hyper_rt;
use hyper_rt::{HyperIo, HyperTimer};

async fn echo_path(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = request
        .into_body()
        .collect()
        .await
        .map_or_else(|_| Bytes::new(), http_body_util::Collected::to_bytes);
    Ok(Response::new(Full::new(body)))
}

#[test]
fn requests_are_served_over_kept_alive_connections() {
    const CONNECTIONS: usize = 2;
    const REQUESTS: usize = 5;
    let executor = LocalExecutor::new();
    let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let spawner = executor.local_spawner();
    let server = executor
        .try_spawn(async move {
            for _ in 0..CONNECTIONS {
                let (stream, _) = listener.accept().await?;
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(HyperIo(stream), hyper::service::service_fn(echo_path));
                drop(
                    spawner
                        .try_spawn(async move { connection.await.map_err(|_| ()) })
                        .unwrap_or_else(|_| unreachable!()),
                );
            }
            Ok::<(), std::io::Error>(())
        })
        .unwrap_or_else(|_| unreachable!());
    let spawner = executor.local_spawner();
    let replies = executor.block_on(async {
        let mut replies = Vec::new();
        for connection in 0..CONNECTIONS {
            let stream = TcpStream::connect(addr).await.unwrap();
            let (mut sender, driver) = hyper::client::conn::http1::handshake(HyperIo(stream))
                .await
                .unwrap();
            let driver = spawner
                .try_spawn(async move { driver.await.map_err(|_| ()) })
                .unwrap_or_else(|_| unreachable!());
            for request in 0..REQUESTS {
                let body = format!("{connection}.{request}");
                let response = sender
                    .send_request(
                        Request::post("/")
                            .header("host", addr.to_string())
                            .body(Full::new(Bytes::from(body)))
                            .unwrap(),
                    )
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200);
                let bytes = response.into_body().collect().await.unwrap().to_bytes();
                replies.push(String::from_utf8(bytes.to_vec()).unwrap());
            }
            drop(sender);
            driver.await.unwrap().unwrap();
        }
        server.await.unwrap().unwrap();
        replies
    });
    let expected: Vec<String> = (0..CONNECTIONS)
        .flat_map(|c| (0..REQUESTS).map(move |r| format!("{c}.{r}")))
        .collect();
    assert_eq!(replies, expected);
    // One connection per client, each registered once on each side.
    assert_eq!(executor.io_figures().registered, 1 + 2 * CONNECTIONS as u64);
}

#[test]
fn a_client_that_sends_no_headers_is_timed_out_on_dinahs_timers() {
    let executor = LocalExecutor::with_config(ExecutorConfig {
        start_paused: true,
        ..ExecutorConfig::default()
    })
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let timer = HyperTimer::new(executor.timer());
    let outcome = executor.block_on(async {
        // Connected, and silent.
        let _silent = TcpStream::connect(addr).await.unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        hyper::server::conn::http1::Builder::new()
            .timer(timer)
            .header_read_timeout(Duration::from_secs(30))
            .serve_connection(HyperIo(stream), hyper::service::service_fn(echo_path))
            .await
    });
    let error = outcome.unwrap_err();
    assert!(error.is_timeout(), "{error}");
    // The paused clock jumped to the deadline: no real time passed.
    assert!(executor.timer().now().ticks() >= 30_000_000);
}

/// The same server on the multi-thread executor: each connection is a task
/// any worker may poll, clients run as tasks at the same time, hyper's
/// timer is the executor's, and every reply comes back whole.
#[test]
fn multi_executor_serves_concurrent_clients_over_hyper() {
    use dinah::executor::{MultiConfig, MultiExecutor};
    const CONNECTIONS: usize = 4;
    const REQUESTS: usize = 10;
    let executor = MultiExecutor::with_config(MultiConfig {
        workers: Some(2),
        ..MultiConfig::default()
    })
    .unwrap();
    let handle = executor.handle();
    let listener = executor
        .block_on(async { TcpListener::bind("127.0.0.1:0".parse().unwrap()) })
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let timer = HyperTimer::new(executor.timer());
    let server = {
        let handle = handle.clone();
        handle
            .clone()
            .try_spawn(async move {
                for _ in 0..CONNECTIONS {
                    let (stream, _) = listener.accept().await?;
                    let connection = hyper::server::conn::http1::Builder::new()
                        .timer(timer.clone())
                        .header_read_timeout(Duration::from_secs(30))
                        .serve_connection(HyperIo(stream), hyper::service::service_fn(echo_path));
                    drop(
                        handle
                            .try_spawn(async move { connection.await.map_err(|_| ()) })
                            .unwrap_or_else(|_| unreachable!()),
                    );
                }
                Ok::<(), std::io::Error>(())
            })
            .unwrap_or_else(|_| unreachable!())
    };
    let clients: Vec<_> = (0..CONNECTIONS)
        .map(|connection| {
            let inner = handle.clone();
            handle
                .try_spawn(async move {
                    let stream = TcpStream::connect(addr).await?;
                    let (mut sender, driver) =
                        hyper::client::conn::http1::handshake(HyperIo(stream))
                            .await
                            .map_err(std::io::Error::other)?;
                    let driver = inner
                        .try_spawn(async move { driver.await.map_err(|_| ()) })
                        .unwrap_or_else(|_| unreachable!());
                    let mut replies = Vec::new();
                    for request in 0..REQUESTS {
                        let response = sender
                            .send_request(
                                Request::post("/")
                                    .header("host", addr.to_string())
                                    .body(Full::new(Bytes::from(format!("{connection}.{request}"))))
                                    .map_err(std::io::Error::other)?,
                            )
                            .await
                            .map_err(std::io::Error::other)?;
                        let bytes = response
                            .into_body()
                            .collect()
                            .await
                            .map_err(std::io::Error::other)?
                            .to_bytes();
                        replies.push(String::from_utf8_lossy(&bytes).into_owned());
                    }
                    drop(sender);
                    let _ = driver.await;
                    Ok::<_, std::io::Error>(replies)
                })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    let replies = executor.block_on(async {
        let mut all = Vec::new();
        for client in clients {
            all.push(client.await.unwrap().unwrap());
        }
        server.await.unwrap().unwrap();
        all
    });
    for (connection, replies) in replies.iter().enumerate() {
        let expected: Vec<String> = (0..REQUESTS).map(|r| format!("{connection}.{r}")).collect();
        assert_eq!(*replies, expected);
    }
    assert_eq!(executor.io_figures().registered, 1 + 2 * CONNECTIONS as u64);
}
