//! A multithreaded integration test: a small service on the multi-thread
//! executor, end to end over loopback. An acceptor task spawns a session
//! task per connection; each session reads lines, and for each one a
//! worker task (spawned per request) takes a permit of a shared semaphore,
//! runs a blocking step on the executor's blocking pool, and sends its
//! reply over a channel to a writer task of the session, under a timeout.
//! Clients on plain threads check every reply.
//!
//! It asserts what the service promises (every request answered, in order
//! per connection, the semaphore's bound never exceeded, nothing left
//! running at shutdown) and nothing about which worker polls which task.

#![cfg(not(miri))]

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dinah::executor::{MultiConfig, MultiExecutor, MultiHandle};
use dinah::net::{TcpListener, TcpStream};
use dinah::pool::ShutdownPolicy;
use dinah::sync::{SharedSemaphore, mpsc};

const CLIENTS: usize = 8;
const REQUESTS: usize = 50;
const PERMITS: u32 = 3;

/// How many requests are being worked on now, and the most at once.
#[derive(Default)]
struct Load {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// Reads one line (without its newline), or `None` at the end.
async fn read_line(stream: &TcpStream, pending: &mut Vec<u8>) -> std::io::Result<Option<String>> {
    loop {
        if let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            return Ok(Some(String::from_utf8_lossy(&line[..end]).into_owned()));
        }
        let mut buffer = [0u8; 256];
        match stream.read(&mut buffer).await? {
            0 => return Ok(None),
            n => pending.extend_from_slice(&buffer[..n]),
        }
    }
}

/// One request: a permit, a blocking step, the reply to the writer.
async fn work(
    handle: MultiHandle,
    permits: Arc<SharedSemaphore>,
    load: Arc<Load>,
    request: String,
) -> Result<String, String> {
    let _permit = permits.acquire().await.map_err(|e| e.to_string())?;
    let now = load.now.fetch_add(1, Ordering::SeqCst) + 1;
    load.most.fetch_max(now, Ordering::SeqCst);
    let job = handle
        .spawn_blocking(move || request.to_uppercase())
        .await
        .map_err(|e| e.to_string())?;
    let reply = job.await.map_err(|e| e.to_string());
    load.now.fetch_sub(1, Ordering::SeqCst);
    reply
}

/// A connection: requests in, each worked on by a task of its own, the
/// replies written back in request order.
async fn session(
    handle: MultiHandle,
    stream: TcpStream,
    permits: Arc<SharedSemaphore>,
    load: Arc<Load>,
) -> Result<usize, String> {
    let stream = Arc::new(stream);
    let (replies, mut to_write) =
        mpsc::channel::<dinah::JoinHandle<Result<String, String>>>(4).map_err(|e| e.to_string())?;
    let writer = {
        let stream = Arc::clone(&stream);
        handle
            .try_spawn(async move {
                let mut written = 0usize;
                while let Some(reply) = to_write.recv().await {
                    let reply = dinah::time::timeout(Duration::from_secs(30), reply)
                        .await
                        .map_err(|_| "a reply took too long".to_owned())?
                        .map_err(|e| e.to_string())??;
                    stream
                        .write_all(format!("{reply}\n").as_bytes())
                        .await
                        .map_err(|e| e.to_string())?;
                    written += 1;
                }
                Ok::<_, String>(written)
            })
            .map_err(|_| "spawn refused".to_owned())?
    };
    let mut pending = Vec::new();
    while let Some(request) = read_line(&stream, &mut pending)
        .await
        .map_err(|e| e.to_string())?
    {
        let job = handle
            .try_spawn(work(
                handle.clone(),
                Arc::clone(&permits),
                Arc::clone(&load),
                request,
            ))
            .map_err(|_| "spawn refused".to_owned())?;
        replies
            .send(job)
            .await
            .map_err(|_| "writer gone".to_owned())?;
    }
    drop(replies);
    writer.await.map_err(|e| e.to_string())?
}

#[test]
fn multi_executor_serves_every_request_of_every_client_in_order() {
    let executor = MultiExecutor::with_config(MultiConfig {
        workers: Some(2),
        ..MultiConfig::default()
    })
    .unwrap();
    let handle = executor.handle();
    let permits = Arc::new(SharedSemaphore::new(PERMITS));
    let load = Arc::new(Load::default());
    let listener = executor
        .block_on(async { TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))) })
        .unwrap();
    let address = listener.local_addr().unwrap();
    let acceptor = {
        let (handle, permits, load) = (handle.clone(), Arc::clone(&permits), Arc::clone(&load));
        handle
            .clone()
            .try_spawn_named("acceptor", async move {
                let mut sessions = Vec::new();
                for _ in 0..CLIENTS {
                    let (stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
                    let task = session(
                        handle.clone(),
                        stream,
                        Arc::clone(&permits),
                        Arc::clone(&load),
                    );
                    sessions.push(
                        handle
                            .try_spawn(task)
                            .map_err(|_| "spawn refused".to_owned())?,
                    );
                }
                let mut served = 0;
                for session in sessions {
                    served += session.await.map_err(|e| e.to_string())??;
                }
                Ok::<_, String>(served)
            })
            .unwrap_or_else(|_| unreachable!())
    };
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            std::thread::spawn(move || {
                let mut stream = std::net::TcpStream::connect(address).unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                for request in 0..REQUESTS {
                    writeln!(stream, "client {client} request {request}").unwrap();
                }
                stream.shutdown(std::net::Shutdown::Write).unwrap();
                let mut replies = Vec::new();
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap() > 0 {
                    replies.push(line.trim_end().to_owned());
                    line.clear();
                }
                let expected: Vec<String> = (0..REQUESTS)
                    .map(|request| format!("CLIENT {client} REQUEST {request}"))
                    .collect();
                assert_eq!(replies, expected, "client {client}: each reply, in order");
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let served = executor.block_on(acceptor).unwrap().unwrap();
    assert_eq!(served, CLIENTS * REQUESTS);
    let most = load.most.load(Ordering::SeqCst);
    assert!(
        (1..=PERMITS as usize).contains(&most),
        "at most {PERMITS} requests worked on at once, saw {most}"
    );
    let report = executor.shutdown_with(ShutdownPolicy::Drain, Duration::from_secs(5));
    assert_eq!(report.left(), 0, "{report:?}");
    let blocking = report.blocking.expect("the executor's pool");
    assert_eq!(blocking.completed, (CLIENTS * REQUESTS) as u64);
}
