//! An HTTP/1 server on dinah: hyper over dinah's sockets, executor and
//! timers through `dinah-hyper`, with no tokio runtime.
//!
//! `cargo run --example http_server` serves on a loopback port, sends
//! itself a few requests with hyper's client (on the same executor), prints
//! the replies and the reactor's figures, and exits.
//! `cargo run --example http_server -- --serve 127.0.0.1:8080` serves until
//! Ctrl-C or SIGTERM (try `curl http://127.0.0.1:8080/hello`), then stops
//! accepting, lets the connections in flight finish for up to two seconds,
//! and prints the shutdown report.
//! `--workers N` (before either) runs it all on a `MultiExecutor` of `N`
//! workers instead of the current-thread `LocalExecutor`: the same code,
//! its connections polled by whichever worker takes them.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use dinah::executor::{MultiConfig, MultiExecutor};
use dinah::net::{TcpListener, TcpStream};
use dinah::pool::ShutdownPolicy;
#[path = "support/stop.rs"]
mod stop;
use dinah::{JoinHandle, LocalExecutor};
use stop::Stop;

use dinah_hyper::{HyperIo, HyperTimer};

/// The service: says hello to the path it was asked for.
async fn hello(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = format!("hello from dinah, {}\n", request.uri().path());
    Ok(Response::new(Full::new(Bytes::from(body))))
}

/// A task to run, on either executor.
type Task = Pin<Box<dyn Future<Output = ()> + Send>>;
/// Spawns a task on the executor the example runs on.
type Spawn = Arc<dyn Fn(Task) -> Result<JoinHandle<()>, &'static str> + Send + Sync>;

/// The executor the example runs on: one thread's, or several workers'.
enum Runtime {
    Local(LocalExecutor<'static>),
    Multi(MultiExecutor),
}

impl Runtime {
    fn spawner(&self) -> Spawn {
        match self {
            // The `Send` door of a local executor (its `Spawner`) serves
            // here, so that one function serves both.
            Self::Local(executor) => {
                let spawner = executor.spawner();
                Arc::new(move |task| spawner.try_spawn(task).map_err(|_| "the executor is full"))
            }
            Self::Multi(executor) => {
                let handle = executor.handle();
                Arc::new(move |task| handle.try_spawn(task).map_err(|_| "the executor shut down"))
            }
        }
    }

    fn block_on<F: Future>(&self, future: F) -> F::Output {
        match self {
            Self::Local(executor) => executor.block_on(future),
            Self::Multi(executor) => executor.block_on(future),
        }
    }

    fn shutdown_with(
        &self,
        policy: ShutdownPolicy,
        deadline: Duration,
    ) -> dinah::executor::ShutdownReport {
        match self {
            Self::Local(executor) => executor.shutdown_with(policy, deadline),
            Self::Multi(executor) => executor.shutdown_with(policy, deadline),
        }
    }

    fn io_figures(&self) -> dinah::io::IoFigures {
        match self {
            Self::Local(executor) => executor.io_figures(),
            Self::Multi(executor) => executor.io_figures(),
        }
    }
}

/// Accepts connections forever, one task each.
async fn serve(listener: TcpListener, spawn: Spawn) -> std::io::Result<()> {
    let timer = HyperTimer::current();
    loop {
        let (stream, _) = listener.accept().await?;
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(timer.clone())
            .header_read_timeout(Duration::from_secs(5))
            .serve_connection(HyperIo::new(stream), hyper::service::service_fn(hello));
        drop(
            spawn(Box::pin(async move {
                // A client that goes away is its own business.
                let _ = connection.await;
            }))
            .map_err(std::io::Error::other)?,
        );
    }
}

/// One request with hyper's client over a dinah stream: the reply's body.
async fn get(
    addr: SocketAddr,
    path: &str,
    spawn: &Spawn,
) -> Result<String, Box<dyn std::error::Error>> {
    let stream = TcpStream::connect(addr).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(HyperIo::new(stream)).await?;
    let driver = spawn(Box::pin(async move {
        let _ = connection.await;
    }))?;
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
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let workers: Option<usize> = match args.first().map(String::as_str) {
        Some("--workers") if args.len() >= 2 => {
            let workers = args[1].parse()?;
            args.drain(..2);
            Some(workers)
        }
        _ => None,
    };
    let serve_at: Option<SocketAddr> = match args.as_slice() {
        [flag, addr] if flag == "--serve" => Some(addr.parse()?),
        [] => None,
        _ => return Err("usage: http_server [--workers N] [--serve ADDR]".into()),
    };
    let runtime = match workers {
        None => Runtime::Local(LocalExecutor::new()),
        Some(workers) => Runtime::Multi(MultiExecutor::with_config(MultiConfig {
            workers: Some(workers),
            ..MultiConfig::default()
        })?),
    };
    let spawn = runtime.spawner();
    let bind = serve_at.unwrap_or_else(|| "127.0.0.1:0".parse().unwrap());
    // Bound inside the runtime, so that its reactor registers the socket.
    let listener = runtime.block_on(async { TcpListener::bind(bind) })?;
    let addr = listener.local_addr()?;
    let inner = Arc::clone(&spawn);
    let server = spawn(Box::pin(async move {
        if let Err(error) = serve(listener, inner).await {
            eprintln!("the server stopped: {error}");
        }
    }))?;
    println!(
        "serving HTTP/1 on http://{addr} ({})",
        workers.map_or("one thread".to_owned(), |n| format!("{n} workers"))
    );
    if serve_at.is_some() {
        let stopped_by = runtime.block_on(async {
            let mut stop = Stop::new()?;
            Ok::<_, std::io::Error>(stop.wait().await)
        })?;
        // Stop accepting; the connections already accepted may finish.
        server.cancel();
        let _ = runtime.block_on(server);
        println!("{stopped_by}: draining the connections in flight");
        let report = runtime.shutdown_with(ShutdownPolicy::Drain, Duration::from_secs(2));
        let finished = report.tasks.len() - report.cancelled_tasks;
        println!(
            "shutdown report: {} connections open at the signal, {finished} finished, {} cut off at the deadline",
            report.tasks.len(),
            report.left()
        );
        return Ok(());
    }
    runtime.block_on(async {
        for path in ["/hello", "/dinah", "/hyper"] {
            println!("GET {path} -> {}", get(addr, path, &spawn).await?);
        }
        Ok::<(), Box<dyn std::error::Error>>(())
    })?;
    let figures = runtime.io_figures();
    println!(
        "reactor: {} sockets registered, {} open now, {} readiness events, {} stale",
        figures.registered, figures.live, figures.events, figures.stale_events
    );
    Ok(())
}
