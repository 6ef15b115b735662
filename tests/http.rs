//! hyper 1.x over dinah's sockets, executors and timers through
//! `dinah-hyper`, on loopback: a server and a client on one executor,
//! keep-alive, a header-read timeout on a paused clock, bodies larger than
//! the adapter's read buffer, HTTP/2 with its connection tasks on
//! `HyperExecutor`, and a refused spawn.

use std::convert::Infallible;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};

use dinah::LocalExecutor;
use dinah::executor::ExecutorConfig;
use dinah::net::{TcpListener, TcpStream};

use dinah_hyper::{HyperExecutor, HyperIo, HyperTimer};

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
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let spawner = executor.local_spawner();
    let server = executor
        .try_spawn(async move {
            for _ in 0..CONNECTIONS {
                let (stream, _) = listener.accept().await?;
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(HyperIo::new(stream), hyper::service::service_fn(echo_path));
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
            let (mut sender, driver) = hyper::client::conn::http1::handshake(HyperIo::new(stream))
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
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let timer = HyperTimer::new(executor.timer());
    let outcome = executor.block_on(async {
        // Connected, and silent.
        let _silent = TcpStream::connect(addr).await.unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        hyper::server::conn::http1::Builder::new()
            .timer(timer)
            .header_read_timeout(Duration::from_secs(30))
            .serve_connection(HyperIo::new(stream), hyper::service::service_fn(echo_path))
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
        .block_on(async { TcpListener::bind("127.0.0.1:0") })
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
                        .serve_connection(
                            HyperIo::new(stream),
                            hyper::service::service_fn(echo_path),
                        );
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
                        hyper::client::conn::http1::handshake(HyperIo::new(stream))
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

/// A body many times the adapter's 4 KiB read buffer goes up and comes
/// back whole, in order.
#[test]
fn a_body_larger_than_the_read_buffer_arrives_whole() {
    let executor = LocalExecutor::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let spawner = executor.local_spawner();
    let body: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let sent = body.clone();
    let echoed = executor.block_on(async move {
        let server = spawner
            .try_spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(HyperIo::new(stream), hyper::service::service_fn(echo_path))
                    .await
            })
            .unwrap_or_else(|_| unreachable!());
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut sender, driver) = hyper::client::conn::http1::handshake(HyperIo::new(stream))
            .await
            .unwrap();
        let driver = spawner
            .try_spawn(async move { driver.await.map_err(|_| ()) })
            .unwrap_or_else(|_| unreachable!());
        let response = sender
            .send_request(
                Request::post("/")
                    .header("host", addr.to_string())
                    .body(Full::new(Bytes::from(sent)))
                    .unwrap(),
            )
            .await
            .unwrap();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        drop(sender);
        driver.await.unwrap().unwrap();
        server.await.unwrap().unwrap();
        bytes
    });
    assert_eq!(echoed.len(), body.len());
    assert!(echoed == body, "the echoed body differs");
}

/// HTTP/2 needs an executor for its connection and stream tasks: on a
/// `MultiExecutor` through `HyperExecutor`, concurrent requests on one
/// connection all come back, and nothing was refused.
#[test]
fn http2_on_a_multi_executor_runs_its_connection_tasks_on_the_hyper_executor() {
    use dinah::executor::{MultiConfig, MultiExecutor};
    const REQUESTS: usize = 8;
    let executor = MultiExecutor::with_config(MultiConfig {
        workers: Some(2),
        ..MultiConfig::default()
    })
    .unwrap();
    let handle = executor.handle();
    let hyper_executor = HyperExecutor::multi(handle.clone());
    let listener = executor
        .block_on(async { TcpListener::bind("127.0.0.1:0") })
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let timer = HyperTimer::new(executor.timer());
    let server = {
        let hyper_executor = hyper_executor.clone();
        handle
            .try_spawn(async move {
                let (stream, _) = listener.accept().await?;
                hyper::server::conn::http2::Builder::new(hyper_executor)
                    .timer(timer)
                    .serve_connection(HyperIo::new(stream), hyper::service::service_fn(echo_path))
                    .await
                    .map_err(std::io::Error::other)
            })
            .unwrap_or_else(|_| unreachable!())
    };
    let client_executor = hyper_executor.clone();
    let replies = executor.block_on(async move {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (sender, connection) =
            hyper::client::conn::http2::handshake(client_executor, HyperIo::new(stream))
                .await
                .unwrap();
        let driver = handle
            .try_spawn(async move { connection.await.map_err(|_| ()) })
            .unwrap_or_else(|_| unreachable!());
        let requests: Vec<_> = (0..REQUESTS)
            .map(|request| {
                let mut sender = sender.clone();
                handle
                    .try_spawn(async move {
                        let response = sender
                            .send_request(
                                Request::post(format!("http://{addr}/"))
                                    .body(Full::new(Bytes::from(format!("stream {request}"))))
                                    .unwrap(),
                            )
                            .await
                            .unwrap();
                        let bytes = response.into_body().collect().await.unwrap().to_bytes();
                        String::from_utf8(bytes.to_vec())
                    })
                    .unwrap_or_else(|_| unreachable!())
            })
            .collect();
        let mut replies = Vec::new();
        for request in requests {
            replies.push(request.await.unwrap().unwrap());
        }
        drop(sender);
        let _ = driver.await;
        replies
    });
    let expected: Vec<String> = (0..REQUESTS).map(|r| format!("stream {r}")).collect();
    assert_eq!(replies, expected);
    assert_eq!(hyper_executor.refused(), 0);
    drop(server);
}

/// hyper's `execute` cannot be refused; a dinah executor can. A future
/// refused by an executor that has shut down is dropped at once and
/// counted.
#[test]
fn a_future_the_executor_refuses_is_dropped_and_counted() {
    use hyper::rt::Executor;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Flag(Arc<AtomicBool>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    let executor = LocalExecutor::new();
    let hyper_executor = HyperExecutor::local(executor.spawner());
    drop(executor);
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = Flag(Arc::clone(&dropped));
    hyper_executor.execute(async move {
        let _flag = flag;
    });
    assert!(
        dropped.load(Ordering::SeqCst),
        "the refused future was kept"
    );
    assert_eq!(hyper_executor.refused(), 1);
    assert_eq!(hyper_executor.clone().refused(), 1);
}
