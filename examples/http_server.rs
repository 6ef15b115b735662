//! An HTTP/1 server on dinah: hyper over dinah's sockets, executor and
//! timers, with no tokio runtime.
//!
//! `cargo run --example http_server` serves on a loopback port, sends
//! itself a few requests with hyper's client (on the same executor), prints
//! the replies and the reactor's figures, and exits.
//! `cargo run --example http_server -- --serve 127.0.0.1:8080` serves until
//! stopped (try `curl http://127.0.0.1:8080/hello`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};

use dinah::LocalExecutor;
use dinah::executor::LocalSpawner;
use dinah::net::{TcpListener, TcpStream};

#[path = "support/hyper_rt.rs"]
mod hyper_rt;
use hyper_rt::{HyperIo, HyperTimer};

/// The service: says hello to the path it was asked for.
async fn hello(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = format!("hello from dinah, {}\n", request.uri().path());
    Ok(Response::new(Full::new(Bytes::from(body))))
}

/// Accepts connections forever, one task each.
async fn serve(listener: TcpListener, spawner: LocalSpawner<'_>) -> std::io::Result<()> {
    let timer = HyperTimer::new(dinah::time::current());
    loop {
        let (stream, _) = listener.accept().await?;
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(timer.clone())
            .header_read_timeout(Duration::from_secs(5))
            .serve_connection(HyperIo(stream), hyper::service::service_fn(hello));
        drop(
            spawner
                .try_spawn(async move {
                    // A client that goes away is its own business.
                    let _ = connection.await;
                })
                .map_err(|_| std::io::Error::other("the executor is full"))?,
        );
    }
}

/// One request with hyper's client over a dinah stream: the reply's body.
async fn get(
    addr: SocketAddr,
    path: &str,
    spawner: &LocalSpawner<'_>,
) -> Result<String, Box<dyn std::error::Error>> {
    let stream = TcpStream::connect(addr).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(HyperIo(stream)).await?;
    let driver = spawner
        .try_spawn(async move {
            let _ = connection.await;
        })
        .map_err(|_| "the executor is full")?;
    let request = Request::get(path)
        .header("host", addr.to_string())
        .body(Empty::<Bytes>::new())?;
    let response = sender.send_request(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    drop(sender);
    let _ = driver.await;
    Ok(format!(
        "{status} {}",
        String::from_utf8_lossy(&body).trim_end()
    ))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let serve_at: Option<SocketAddr> = match args.as_slice() {
        [flag, addr] if flag == "--serve" => Some(addr.parse()?),
        [] => None,
        _ => return Err("usage: http_server [--serve ADDR]".into()),
    };
    let executor = LocalExecutor::new();
    let listener = TcpListener::bind(serve_at.unwrap_or_else(|| "127.0.0.1:0".parse().unwrap()))?;
    let addr = listener.local_addr()?;
    let spawner = executor.local_spawner();
    let server = executor
        .try_spawn(serve(listener, executor.local_spawner()))
        .map_err(|_| "the executor is full")?;
    println!("serving HTTP/1 on http://{addr}");
    if serve_at.is_some() {
        return Ok(executor.block_on(server)??);
    }
    executor.block_on(async {
        for path in ["/hello", "/dinah", "/hyper"] {
            println!("GET {path} -> {}", get(addr, path, &spawner).await?);
        }
        Ok::<(), Box<dyn std::error::Error>>(())
    })?;
    let figures = executor.io_figures();
    println!(
        "reactor: {} sockets registered, {} open now, {} readiness events, {} stale",
        figures.registered, figures.live, figures.events, figures.stale_events
    );
    Ok(())
}
