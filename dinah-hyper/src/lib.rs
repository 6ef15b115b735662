//! hyper on dinah: the runtime traits hyper asks of its host, so that a
//! hyper server or client runs on dinah's executors, sockets and timers
//! with no tokio runtime, in as few lines as on tokio with hyper-util.
//!
//! | hyper's trait | here | over |
//! | --- | --- | --- |
//! | [`rt::Read`](hyper::rt::Read), [`rt::Write`](hyper::rt::Write) | [`HyperIo`] | any `futures-io` stream: dinah's `TcpStream`, or a TLS stream built on one |
//! | [`rt::Timer`](hyper::rt::Timer), [`rt::Sleep`](hyper::rt::Sleep) | [`HyperTimer`] | a dinah executor's timers |
//! | [`rt::Executor`](hyper::rt::Executor) | [`HyperExecutor`] | a `LocalExecutor`'s `Spawner` or a `MultiExecutor`'s `MultiHandle` |
//!
//! # A server
//!
//! ```no_run
//! use std::convert::Infallible;
//!
//! use dinah::LocalExecutor;
//! use dinah::executor::Spawner;
//! use dinah::net::TcpListener;
//! use dinah_hyper::{HyperIo, HyperTimer};
//! use http_body_util::Full;
//! use hyper::body::{Bytes, Incoming};
//! use hyper::{Request, Response};
//!
//! async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
//!     Ok(Response::new(Full::new(Bytes::from("hello\n"))))
//! }
//!
//! async fn serve(spawner: Spawner) -> std::io::Result<()> {
//!     let listener = TcpListener::bind("127.0.0.1:8080")?;
//!     let timer = HyperTimer::current();
//!     loop {
//!         let (stream, _) = listener.accept().await?;
//!         let connection = hyper::server::conn::http1::Builder::new()
//!             .timer(timer.clone())
//!             .serve_connection(HyperIo::new(stream), hyper::service::service_fn(hello));
//!         // A connection that fails is the client's business.
//!         drop(spawner.try_spawn(async move { drop(connection.await) }));
//!     }
//! }
//!
//! let executor = LocalExecutor::new();
//! executor.block_on(serve(executor.spawner()))?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! What this crate does not do: it starts no runtime and accepts no
//! connection for you (that is the loop above), and it has no graceful
//! shutdown of its own: hyper's `graceful_shutdown` on each connection,
//! with a dinah task group or cancellation, does that.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod executor;
mod io;
mod timer;

pub use executor::HyperExecutor;
pub use io::HyperIo;
pub use timer::HyperTimer;
