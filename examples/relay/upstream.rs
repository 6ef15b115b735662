//! A stand-in for the upstream store, on a thread and an executor of its
//! own: it takes batches over TCP (`batch N K`, then K lines) and replies
//! `ok N`, or `busy` while told to, or nothing until its gate opens.
// Shared with tests/relay.rs, which uses parts the example does not.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::thread;

use dinah::LocalExecutor;
use dinah::net::TcpListener;

use crate::adapter::Gate;

/// The store's switches and counts.
#[derive(Default)]
pub(crate) struct Store {
    /// Replies `busy` this many more times.
    pub(crate) busy: AtomicU32,
    /// Replies wait here.
    pub(crate) hold: Gate,
    /// Batches committed, and their events.
    pub(crate) batches: AtomicU64,
    pub(crate) events: AtomicU64,
}

/// Serves one connection at `addr` on a thread of its own; returns the
/// address and the store.
pub(crate) fn start() -> std::io::Result<(SocketAddr, Arc<Store>)> {
    let store = Arc::new(Store::default());
    let (ready_tx, ready) = std::sync::mpsc::channel();
    {
        let store = Arc::clone(&store);
        thread::Builder::new()
            .name("upstream".to_owned())
            .spawn(move || {
                let executor = LocalExecutor::new();
                let listener = match TcpListener::bind("127.0.0.1:0") {
                    Ok(listener) => listener,
                    Err(error) => return drop(ready_tx.send(Err(error))),
                };
                let _ = ready_tx.send(listener.local_addr());
                let served = executor.block_on(async {
                    let (stream, _) = listener.accept().await?;
                    stream.set_nodelay(true)?;
                    let mut buffer = Vec::new();
                    let mut chunk = [0u8; 1024];
                    loop {
                        // A header and its lines, then a reply.
                        let Some((number, count)) = header(&mut buffer) else {
                            let n = stream.read(&mut chunk).await?;
                            if n == 0 {
                                return Ok::<(), std::io::Error>(());
                            }
                            buffer.extend_from_slice(&chunk[..n]);
                            continue;
                        };
                        while lines(&buffer) < count {
                            let n = stream.read(&mut chunk).await?;
                            if n == 0 {
                                return Ok(());
                            }
                            buffer.extend_from_slice(&chunk[..n]);
                        }
                        drop_lines(&mut buffer, count);
                        store.hold.hold();
                        let reply = if take_one(&store.busy) {
                            "busy\n".to_owned()
                        } else {
                            store.batches.fetch_add(1, Ordering::Relaxed);
                            store.events.fetch_add(count as u64, Ordering::Relaxed);
                            format!("ok {number}\n")
                        };
                        stream.write_all(reply.as_bytes()).await?;
                    }
                });
                drop(served);
            })?;
    }
    let addr = ready
        .recv()
        .map_err(|_| std::io::Error::other("the upstream thread ended"))??;
    Ok((addr, store))
}

/// Takes a `batch N K` line off the front of `buffer`.
fn header(buffer: &mut Vec<u8>) -> Option<(u64, usize)> {
    let end = buffer.iter().position(|&byte| byte == b'\n')?;
    let line: Vec<u8> = buffer.drain(..=end).collect();
    let line = String::from_utf8_lossy(&line);
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("batch"), Some(number), Some(count)) => {
            Some((number.parse().ok()?, count.parse().ok()?))
        }
        _ => None,
    }
}

fn lines(buffer: &[u8]) -> usize {
    buffer.iter().filter(|&&byte| byte == b'\n').count()
}

fn drop_lines(buffer: &mut Vec<u8>, count: usize) {
    let mut seen = 0;
    let end = buffer
        .iter()
        .position(|&byte| {
            if byte == b'\n' {
                seen += 1;
            }
            seen == count
        })
        .map_or(0, |end| end + 1);
    buffer.drain(..end);
}

/// Takes one from `count` if it is above zero; whether it did.
fn take_one(count: &AtomicU32) -> bool {
    let mut seen = count.load(Ordering::Relaxed);
    while seen > 0 {
        match count.compare_exchange_weak(seen, seen - 1, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => seen = now,
        }
    }
    false
}
