//! Several tasks waiting on one resource at once: every one of them is
//! woken when it may progress. One test per resource a task can wait on:
//! a TCP listener, each direction of a TCP stream, a UDP socket (with and
//! without a peer), the event source, the channels, the semaphores and the
//! timers. Over loopback only; each test makes a bounded number of
//! connections and datagrams. Progress is proven by sequence: the peer
//! sends the next connection or datagram only once the previous one was
//! served, so a waiter that is never woken leaves the test's guard timeout
//! to fail it (the guard bounds a hang, it measures nothing).

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use dinah::LocalExecutor;
#[cfg(not(miri))]
use dinah::net::UdpSocket;
use dinah::net::{TcpListener, TcpStream};
use dinah::task::yield_now;
use dinah::time::timeout;

const WAITERS: usize = 4;
/// How long a test may hang before it fails: far beyond any healthy run.
const GUARD: Duration = Duration::from_secs(20);

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Lets every spawned task run until it waits.
async fn settle() {
    for _ in 0..4 {
        yield_now().await;
    }
}

/// A loopback connection: the peer's end, and dinah's end to share among
/// tasks.
fn connected() -> (std::net::TcpStream, std::rc::Rc<TcpStream>) {
    let listener = std::net::TcpListener::bind(loopback()).unwrap();
    let peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (theirs, _) = listener.accept().unwrap();
    (peer, std::rc::Rc::new(TcpStream::from_std(theirs).unwrap()))
}

/// Awaits every handle in turn, within the guard: what each task gave back,
/// in the handles' order. `waiter` names the tasks in the failure message.
async fn every_one_served<T, E: std::fmt::Debug, J: std::fmt::Debug>(
    handles: Vec<impl std::future::Future<Output = Result<Result<T, E>, J>>>,
    waiter: &str,
) -> Vec<T> {
    timeout(GUARD, async {
        let mut outputs = Vec::new();
        for handle in handles {
            outputs.push(handle.await.unwrap().unwrap());
        }
        outputs
    })
    .await
    .unwrap_or_else(|_| panic!("not every {waiter} was woken"))
}

#[test]
fn every_task_accepting_on_one_listener_gets_a_connection() {
    let executor = LocalExecutor::new();
    let listener = std::rc::Rc::new(TcpListener::bind(loopback()).unwrap());
    let addr = listener.local_addr().unwrap();
    let (accepted, served) = mpsc::channel::<usize>();
    let handles: Vec<_> = (0..WAITERS)
        .map(|n| {
            let listener = std::rc::Rc::clone(&listener);
            let accepted = accepted.clone();
            executor
                .try_spawn(async move {
                    let (stream, _) = listener.accept().await?;
                    accepted.send(n).unwrap();
                    Ok::<_, std::io::Error>(stream)
                })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    // The connections come one at a time, each after the last was
    // accepted: every accepter is waiting before the first arrives.
    let client = thread::spawn(move || {
        let mut streams = Vec::new();
        for _ in 0..WAITERS {
            streams.push(std::net::TcpStream::connect(addr).unwrap());
            served
                .recv_timeout(GUARD)
                .expect("the connection is accepted");
        }
        streams
    });
    let streams = executor.block_on(async { every_one_served(handles, "accepter").await });
    assert_eq!(streams.len(), WAITERS);
    drop(client.join().unwrap());
}

#[test]
fn every_task_reading_one_stream_is_woken_by_the_bytes_it_may_read() {
    let executor = LocalExecutor::new();
    let (mut peer, stream) = connected();
    let (read, done) = mpsc::channel::<u8>();
    let handles: Vec<_> = (0..WAITERS)
        .map(|_| {
            let stream = std::rc::Rc::clone(&stream);
            let read = read.clone();
            executor
                .try_spawn(async move {
                    let mut byte = [0u8; 1];
                    let n = stream.read(&mut byte).await?;
                    assert_eq!(n, 1);
                    read.send(byte[0]).unwrap();
                    Ok::<_, std::io::Error>(byte[0])
                })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    let writer = thread::spawn(move || {
        for n in 0..WAITERS as u8 {
            peer.write_all(&[n]).unwrap();
            done.recv_timeout(GUARD).expect("the byte is read");
        }
        peer
    });
    let mut bytes = executor.block_on(async {
        settle().await;
        every_one_served(handles, "reader").await
    });
    bytes.sort_unstable();
    assert_eq!(bytes, [0, 1, 2, 3]);
    drop(writer.join().unwrap());
}

#[test]
fn every_task_writing_to_a_full_stream_is_woken_when_it_drains() {
    let executor = LocalExecutor::new();
    let (mut peer, stream) = connected();
    const CHUNK: usize = 64 * 1024;
    let written = executor.block_on(async {
        // Fill the connection until a write would block.
        let chunk = vec![7u8; CHUNK];
        let mut filled = 0usize;
        loop {
            let write = std::pin::pin!(stream.write(&chunk));
            match dinah_poll_once(write).await {
                Some(n) => filled += n.unwrap(),
                None => break,
            }
        }
        let handles: Vec<_> = (0..WAITERS)
            .map(|_| {
                let stream = std::rc::Rc::clone(&stream);
                executor
                    .try_spawn(async move {
                        stream.write_all(&[1u8; 1024]).await?;
                        Ok::<_, std::io::Error>(1024usize)
                    })
                    .unwrap_or_else(|_| unreachable!())
            })
            .collect();
        settle().await;
        // The peer drains everything: the filled bytes and each writer's.
        let total = filled + WAITERS * 1024;
        let reader = thread::spawn(move || {
            let mut buf = vec![0u8; CHUNK];
            let mut got = 0;
            while got < total {
                got += peer.read(&mut buf).unwrap();
            }
            got
        });
        let each: usize = every_one_served(handles, "writer").await.iter().sum();
        (filled + each, reader)
    });
    let (sent, reader) = written;
    assert_eq!(reader.join().unwrap(), sent);
}

/// Polls `future` once: its output if it was ready.
async fn dinah_poll_once<F: std::future::Future + Unpin>(mut future: F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut future).poll(cx) {
            std::task::Poll::Ready(output) => Some(output),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

// Miri cannot run UDP sockets (it has no `sendto` or socket `ioctl`); the
// wait protocol they share with TCP runs there through the TCP tests.
#[cfg(not(miri))]
fn udp_waiters(connected: bool) {
    let executor = LocalExecutor::new();
    let socket = std::rc::Rc::new(UdpSocket::bind(loopback()).unwrap());
    let addr = socket.local_addr().unwrap();
    let peer = std::net::UdpSocket::bind(loopback()).unwrap();
    if connected {
        socket.connect(peer.local_addr().unwrap()).unwrap();
    }
    let (received, done) = mpsc::channel::<u8>();
    let handles: Vec<_> = (0..WAITERS)
        .map(|_| {
            let socket = std::rc::Rc::clone(&socket);
            let received = received.clone();
            executor
                .try_spawn(async move {
                    let mut buf = [0u8; 8];
                    let n = if connected {
                        socket.recv(&mut buf).await?
                    } else {
                        socket.recv_from(&mut buf).await?.0
                    };
                    assert_eq!(n, 1);
                    received.send(buf[0]).unwrap();
                    Ok::<_, std::io::Error>(buf[0])
                })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    let sender = thread::spawn(move || {
        for n in 0..WAITERS as u8 {
            peer.send_to(&[n], addr).unwrap();
            done.recv_timeout(GUARD).expect("the datagram is received");
        }
    });
    let mut got = executor.block_on(async {
        settle().await;
        every_one_served(handles, "receiver").await
    });
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2, 3]);
    sender.join().unwrap();
}

#[cfg(not(miri))]
#[test]
fn every_task_receiving_from_one_udp_socket_gets_a_datagram() {
    udp_waiters(false);
}

#[cfg(not(miri))]
#[test]
fn every_task_receiving_on_a_connected_udp_socket_gets_a_datagram() {
    udp_waiters(true);
}

#[cfg(not(miri))]
#[test]
fn a_receive_given_up_takes_its_waker_back_and_the_others_are_still_woken() {
    let executor = LocalExecutor::new();
    let socket = std::rc::Rc::new(UdpSocket::bind(loopback()).unwrap());
    let addr = socket.local_addr().unwrap();
    let peer = std::net::UdpSocket::bind(loopback()).unwrap();
    let got = executor.block_on(async {
        let waiting = {
            let socket = std::rc::Rc::clone(&socket);
            executor
                .try_spawn(async move {
                    let mut buf = [0u8; 8];
                    socket
                        .recv_from(&mut buf)
                        .await
                        .map(|(n, _)| buf[..n].to_vec())
                })
                .unwrap_or_else(|_| unreachable!())
        };
        // A second receive waits, then is dropped (a select that lost).
        {
            let mut buf = [0u8; 8];
            let receive = std::pin::pin!(socket.recv_from(&mut buf));
            assert!(dinah_poll_once(receive).await.is_none());
        }
        settle().await;
        peer.send_to(b"hi", addr).unwrap();
        timeout(GUARD, waiting)
            .await
            .expect("the remaining receiver is woken")
            .unwrap()
            .unwrap()
    });
    assert_eq!(got, b"hi");
}

/// Runs `WAITERS` tasks made by `waiter` until each waits, then `release`,
/// and returns what the tasks gave back, each one's output once.
fn all_served<T: 'static>(
    waiter: impl Fn(usize) -> std::pin::Pin<Box<dyn std::future::Future<Output = T>>>,
    release: impl AsyncFnOnce(),
) -> Vec<T> {
    let executor = LocalExecutor::new();
    let handles: Vec<_> = (0..WAITERS)
        .map(|n| {
            let waiting = waiter(n);
            executor
                .try_spawn(async move { Ok::<_, std::convert::Infallible>(waiting.await) })
                .unwrap_or_else(|_| unreachable!())
        })
        .collect();
    executor.block_on(async {
        settle().await;
        release().await;
        every_one_served(handles, "waiter").await
    })
}

#[test]
fn every_task_waiting_on_the_event_source_is_woken_by_one_raise() {
    static EVENT: dinah::io::Event<WAITERS> = dinah::io::Event::new();
    let raised = all_served(
        |_| Box::pin(async { EVENT.wait().await.unwrap() }),
        async || {
            assert_eq!(EVENT.waiting(), WAITERS as u32);
            assert_eq!(EVENT.raise(), WAITERS);
        },
    );
    assert_eq!(raised, [1; WAITERS]);
}

#[test]
fn every_task_acquiring_from_an_empty_semaphore_gets_a_permit() {
    static CORE: dinah::sync::Semaphore<WAITERS> = dinah::sync::Semaphore::new(0);
    let served = all_served(
        |_| Box::pin(async { CORE.acquire().await.unwrap().forget() }),
        async || CORE.add_permits(WAITERS as u32).unwrap(),
    );
    assert_eq!(served.len(), WAITERS);
    let shared = std::rc::Rc::new(dinah::sync::SharedSemaphore::new(0));
    let releaser = std::rc::Rc::clone(&shared);
    let served = all_served(
        move |_| {
            let shared = std::rc::Rc::clone(&shared);
            Box::pin(async move { shared.acquire().await.unwrap().forget() })
        },
        async move || releaser.add_permits(WAITERS as u32).unwrap(),
    );
    assert_eq!(served.len(), WAITERS);
}

#[test]
fn every_task_sending_into_a_full_channel_gets_its_turn() {
    let (tx, mut rx) = dinah::sync::mpsc::channel::<usize>(1).unwrap();
    tx.try_send(usize::MAX).unwrap();
    let mut got = Vec::new();
    let sent = all_served(
        move |n| {
            let tx = tx.clone();
            Box::pin(async move { tx.send(n).await.unwrap() })
        },
        async || {
            for _ in 0..=WAITERS {
                got.push(rx.recv().await.unwrap());
            }
        },
    );
    assert_eq!(sent.len(), WAITERS);
    static CORE: dinah::sync::Channel<usize, 1, WAITERS> = dinah::sync::Channel::new();
    let (tx, mut rx) = CORE.split().unwrap();
    tx.try_send(usize::MAX).unwrap();
    let sent = all_served(
        move |n| {
            let tx = tx.clone();
            Box::pin(async move { tx.send(n).await.unwrap() })
        },
        async || {
            for _ in 0..=WAITERS {
                rx.recv().await.unwrap();
            }
        },
    );
    assert_eq!(sent.len(), WAITERS);
}

#[test]
fn every_task_sleeping_to_one_deadline_is_woken_at_it() {
    let woke = all_served(
        |n| {
            Box::pin(async move {
                dinah::time::sleep(Duration::from_millis(2)).await;
                n
            })
        },
        async || {},
    );
    assert_eq!(woke, [0, 1, 2, 3]);
}
