//! `benches/net.rs --serve CONTENDER ADDR SECONDS`: the hyper server of the
//! `hyper_requests` case, alone on a current-thread runtime, for a load
//! generator outside both runtimes (`wrk`; `benches/http_wrk.sh`). It
//! accepts connections for `SECONDS` and exits, so that a tracer attached
//! to it prints its totals.

use std::net::SocketAddr;
use std::time::Duration;

use dinah_hyper::HyperIo;
use hyper_util::rt::TokioIo;

use super::net_hyper::hello;

/// Serves on dinah's `LocalExecutor` until `seconds` have passed.
fn dinah_serve(addr: SocketAddr, seconds: u64) {
    let executor = dinah::LocalExecutor::new();
    let spawner = executor.local_spawner();
    let server = async move {
        let listener = dinah::net::TcpListener::bind(addr)?;
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(HyperIo::new(stream), hyper::service::service_fn(hello));
            drop(spawner.try_spawn(async move { connection.await.map_err(|_| ()) }));
        }
        #[allow(unreachable_code)]
        Ok::<(), std::io::Error>(())
    };
    let served = executor.block_on(dinah::time::timeout(Duration::from_secs(seconds), server));
    if let Ok(Err(error)) = served {
        panic!("the dinah server stopped: {error}");
    }
}

/// Serves on tokio's current-thread runtime until `seconds` have passed.
fn tokio_serve(addr: SocketAddr, seconds: u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), hyper::service::service_fn(hello));
            tokio::spawn(async move {
                let _ = connection.await;
            });
        }
        #[allow(unreachable_code)]
        Ok::<(), std::io::Error>(())
    };
    let served = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(seconds), server).await });
    if let Ok(Err(error)) = served {
        panic!("the tokio server stopped: {error}");
    }
}

/// Runs `--serve CONTENDER ADDR SECONDS` if those are the arguments; says
/// whether it did. The address must be a loopback one.
pub(crate) fn serve_if_asked() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [flag, contender, addr, seconds] = args.as_slice() else {
        return false;
    };
    if flag != "--serve" {
        return false;
    }
    let addr: SocketAddr = addr
        .parse()
        .expect("--serve CONTENDER ADDR SECONDS: an address");
    assert!(addr.ip().is_loopback(), "benchmarks serve on loopback only");
    let seconds: u64 = seconds
        .parse()
        .expect("--serve CONTENDER ADDR SECONDS: seconds");
    match contender.as_str() {
        "dinah" => dinah_serve(addr, seconds),
        "tokio" => tokio_serve(addr, seconds),
        other => panic!("no server {other}: dinah or tokio"),
    }
    true
}
