//! [`File`]: an open file whose reads, writes and seeks run on the I/O
//! pool, one at a time, with the file's position kept as `std`'s is.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::{Future, poll_fn};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::pool::run_on_io_pool;

/// The most bytes one background read or write moves.
const CHUNK: usize = 64 * 1024;

/// The file and its buffer, which travel to the pool for each call and
/// back.
struct Inner {
    std: std::fs::File,
    /// Bytes read ahead of the caller (`buf[start..]`), or the bytes of a
    /// write on its way.
    buf: Vec<u8>,
    start: usize,
}

impl Inner {
    /// Bytes read from the file that the caller has not taken.
    fn unread(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Moves the file's position back over what was read ahead and not
    /// taken, so that the OS's position is the caller's again.
    fn give_back_unread(&mut self) -> io::Result<()> {
        let unread = self.unread();
        self.buf.clear();
        self.start = 0;
        if unread > 0 {
            let back = i64::try_from(unread).unwrap_or(i64::MAX);
            self.std.seek(SeekFrom::Current(-back))?;
        }
        Ok(())
    }
}

/// What a background call did.
enum Done {
    Read(io::Result<()>),
    Write(io::Result<()>),
    Seek(io::Result<u64>),
    /// Another call on the file (its result travels apart).
    Call,
}

type Job = Pin<Box<dyn Future<Output = io::Result<(Inner, Done)>> + Send>>;

enum State {
    /// No call in flight. `None` once a call was lost (the pool could not
    /// run it, or it panicked): the file is gone with it.
    Idle(Option<Inner>),
    Busy(Job),
}

/// An open file, read and written without blocking the executor's thread.
///
/// Each read, write or seek is a blocking call from `std::fs::File`, run
/// on the process's I/O pool (see [the module](super)); one is in flight at
/// a time, and the file's position moves as with `std`'s: a read or write
/// starts where the last one (or a seek) left it.
///
/// - **Reads** move at most 64 KiB at a time, and no more than the caller
///   asked for; what the caller has not taken is given back (the position
///   moved back) before a write or seek.
/// - **Writes return once the bytes are copied** (at most 64 KiB per call),
///   and reach the file in the background. An error of such a write is
///   returned by the next call on the file ([`write`](Self::write),
///   [`read`](Self::read), [`flush`](Self::flush), [`seek`](Self::seek),
///   ...). [`flush`](Self::flush) waits until every write has reached the
///   OS and says whether it failed; [`sync_all`](Self::sync_all) then asks
///   the OS to put it on the disk.
/// - **Cancellation.** A call cannot be taken back once on the pool: a
///   `read` dropped while it waits may have read (the bytes are kept for
///   the next read); a write, once its call returned, will be written.
///   Dropping the `File` with a write in flight lets that write finish,
///   but its error is lost: flush first to know it.
///
/// With the `futures-io` feature it implements `AsyncRead`, `AsyncWrite`
/// and `AsyncSeek`. Not promised: anything about other handles to the same
/// file (the OS's rules apply).
pub struct File {
    state: State,
    /// A background write's error, for the next call.
    error: Option<io::Error>,
}

impl File {
    /// Opens the file at `path` to read ([`std::fs::File::open`]).
    ///
    /// # Errors
    ///
    /// The OS's (`NotFound`, ...).
    pub async fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_owned();
        run_on_io_pool(move || std::fs::File::open(path))
            .await
            .map(Self::from_std)
    }

    /// Creates (or truncates) the file at `path` to write
    /// ([`std::fs::File::create`]).
    ///
    /// # Errors
    ///
    /// The OS's.
    pub async fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_owned();
        run_on_io_pool(move || std::fs::File::create(path))
            .await
            .map(Self::from_std)
    }

    /// Opens `path` as `options` say ([`std::fs::OpenOptions::open`]).
    ///
    /// # Errors
    ///
    /// The OS's.
    pub async fn open_with(
        options: std::fs::OpenOptions,
        path: impl AsRef<Path>,
    ) -> io::Result<Self> {
        let path = path.as_ref().to_owned();
        run_on_io_pool(move || options.open(path))
            .await
            .map(Self::from_std)
    }

    /// Takes over an open `std` file (its position is where it was).
    #[must_use]
    pub fn from_std(std: std::fs::File) -> Self {
        Self {
            state: State::Idle(Some(Inner {
                std,
                buf: Vec::new(),
                start: 0,
            })),
            error: None,
        }
    }

    /// Waits until no call is in flight: the file, or the error of the
    /// last background write (taken: it is returned once), or an error if
    /// the file was lost. `done` hears what the finished call did.
    fn poll_idle(
        &mut self,
        cx: &mut Context<'_>,
        mut done: impl FnMut(&mut Inner, Done) -> Option<io::Result<()>>,
    ) -> Poll<io::Result<&mut Inner>> {
        if let State::Busy(job) = &mut self.state {
            let finished = ready!(job.as_mut().poll(cx));
            self.state = State::Idle(None);
            match finished {
                Ok((mut inner, what)) => {
                    let answer = match what {
                        Done::Write(Err(error)) => {
                            self.error = Some(error);
                            None
                        }
                        other => done(&mut inner, other),
                    };
                    self.state = State::Idle(Some(inner));
                    if let Some(Err(error)) = answer {
                        return Poll::Ready(Err(error));
                    }
                }
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
        if let Some(error) = self.error.take() {
            return Poll::Ready(Err(error));
        }
        match &mut self.state {
            State::Idle(Some(inner)) => Poll::Ready(Ok(inner)),
            _ => Poll::Ready(Err(io::Error::other(
                "dinah: the file was lost with a call the I/O pool could not finish",
            ))),
        }
    }

    /// Sends `inner` to the pool for `call`.
    fn start(&mut self, call: impl FnOnce(&mut Inner) -> Done + Send + 'static) {
        let State::Idle(inner) = &mut self.state else {
            return;
        };
        let Some(mut inner) = inner.take() else {
            return;
        };
        self.state = State::Busy(Box::pin(run_on_io_pool(move || {
            let done = call(&mut inner);
            Ok((inner, done))
        })));
    }

    /// [`read`](Self::read) as a poll.
    ///
    /// # Errors
    ///
    /// As [`read`](Self::read).
    pub fn poll_read(&mut self, cx: &mut Context<'_>, dst: &mut [u8]) -> Poll<io::Result<usize>> {
        loop {
            let mut at_end = false;
            let inner = ready!(self.poll_idle(cx, |_, done| match done {
                Done::Read(Err(error)) => Some(Err(error)),
                Done::Read(Ok(())) => {
                    at_end = true;
                    None
                }
                _ => None,
            }))?;
            if inner.unread() > 0 {
                let n = inner.unread().min(dst.len());
                dst[..n].copy_from_slice(&inner.buf[inner.start..inner.start + n]);
                inner.start += n;
                return Poll::Ready(Ok(n));
            }
            if dst.is_empty() || at_end {
                // A read that came back with nothing: the end of the file.
                return Poll::Ready(Ok(0));
            }
            let want = dst.len().min(CHUNK);
            self.start(move |inner| {
                inner.buf.clear();
                inner.start = 0;
                inner.buf.resize(want, 0);
                let read = inner.std.read(&mut inner.buf);
                inner.buf.truncate(*read.as_ref().unwrap_or(&0));
                Done::Read(read.map(drop))
            });
        }
    }

    /// Reads what is there into `buf`: at least one byte, or 0 at the end
    /// of the file (or for an empty `buf`).
    ///
    /// # Errors
    ///
    /// The OS's, or an earlier background write's.
    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_read(cx, buf)).await
    }

    /// Reads to the end of the file, appending to `buf`: how many bytes.
    ///
    /// # Errors
    ///
    /// As [`read`](Self::read); what was read before the error stays in
    /// `buf`.
    pub async fn read_to_end(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        let mut chunk = vec![0u8; CHUNK];
        let mut total = 0;
        loop {
            let n = self.read(&mut chunk).await?;
            if n == 0 {
                return Ok(total);
            }
            buf.extend_from_slice(&chunk[..n]);
            total += n;
        }
    }

    /// [`write`](Self::write) as a poll.
    ///
    /// # Errors
    ///
    /// As [`write`](Self::write).
    pub fn poll_write(&mut self, cx: &mut Context<'_>, src: &[u8]) -> Poll<io::Result<usize>> {
        let inner = ready!(self.poll_idle(cx, |_, _| None))?;
        if src.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let n = src.len().min(CHUNK);
        let unread = inner.unread();
        let mut bytes = std::mem::take(&mut inner.buf);
        bytes.clear();
        bytes.extend_from_slice(&src[..n]);
        // What was read ahead goes back first, then the write.
        self.start(move |inner| {
            let written = (|| {
                if unread > 0 {
                    let back = i64::try_from(unread).unwrap_or(i64::MAX);
                    inner.std.seek(SeekFrom::Current(-back))?;
                }
                inner.std.write_all(&bytes)
            })();
            bytes.clear();
            inner.buf = bytes;
            inner.start = 0;
            Done::Write(written)
        });
        Poll::Ready(Ok(n))
    }

    /// Copies at most 64 KiB of `buf` to be written in the background:
    /// how many bytes were taken (at least one, unless `buf` is empty).
    ///
    /// # Errors
    ///
    /// An earlier background write's (this one's comes with the next
    /// call), or the loss of the file.
    pub async fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_write(cx, buf)).await
    }

    /// Writes all of `buf` (in the background, as [`write`](Self::write)).
    ///
    /// # Errors
    ///
    /// As [`write`](Self::write).
    pub async fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let n = self.write(buf).await?;
            buf = &buf[n..];
        }
        Ok(())
    }

    /// [`flush`](Self::flush) as a poll.
    ///
    /// # Errors
    ///
    /// As [`flush`](Self::flush).
    pub fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_idle(cx, |_, _| None).map_ok(drop)
    }

    /// Waits until every write has reached the OS: the first error among
    /// them, if any. (To have the OS put the data on the disk as well,
    /// [`sync_all`](Self::sync_all).)
    ///
    /// # Errors
    ///
    /// A background write's.
    pub async fn flush(&mut self) -> io::Result<()> {
        poll_fn(|cx| self.poll_flush(cx)).await
    }

    /// [`seek`](Self::seek) as a poll: the first call starts the seek to
    /// `pos`, later calls until it completes only wait for it (their `pos`
    /// is not looked at).
    ///
    /// # Errors
    ///
    /// As [`seek`](Self::seek).
    pub fn poll_seek(&mut self, cx: &mut Context<'_>, pos: SeekFrom) -> Poll<io::Result<u64>> {
        loop {
            // A seek in flight is this call's (started by its first poll).
            let mut sought = None;
            let idle = ready!(self.poll_idle(cx, |_, done| {
                if let Done::Seek(result) = done {
                    sought = Some(result);
                }
                None
            }));
            if let Some(result) = sought {
                return Poll::Ready(result);
            }
            idle?;
            self.start(move |inner| {
                // The caller's position is behind the OS's by what was
                // read ahead.
                let pos = match pos {
                    SeekFrom::Current(offset) => {
                        let unread = i64::try_from(inner.unread()).unwrap_or(i64::MAX);
                        SeekFrom::Current(offset.saturating_sub(unread))
                    }
                    other => other,
                };
                inner.buf.clear();
                inner.start = 0;
                Done::Seek(inner.std.seek(pos))
            });
        }
    }

    /// Moves the position to `pos` (after every write in flight): the new
    /// position from the start of the file.
    ///
    /// # Errors
    ///
    /// The OS's (a position before the start), or a background write's.
    pub async fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        poll_fn(|cx| self.poll_seek(cx, pos)).await
    }

    /// Runs `call` on the file on the pool, after every write in flight.
    async fn call<T: Send + 'static>(
        &mut self,
        call: impl FnOnce(&mut std::fs::File) -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        poll_fn(|cx| self.poll_idle(cx, |_, _| None).map_ok(drop)).await?;
        let mut result = None;
        let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
        let kept = std::sync::Arc::clone(&slot);
        self.start(move |inner| {
            *kept
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(call(&mut inner.std));
            Done::Call
        });
        poll_fn(|cx| {
            self.poll_idle(cx, |_, _| {
                result = slot
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                None
            })
            .map_ok(drop)
        })
        .await?;
        result.unwrap_or_else(|| Err(io::Error::other("dinah: the file call did not run")))
    }

    /// Writes what is in flight, then has the OS put the file's data and
    /// metadata on the disk ([`std::fs::File::sync_all`]).
    ///
    /// # Errors
    ///
    /// The OS's, or a background write's.
    pub async fn sync_all(&mut self) -> io::Result<()> {
        self.call(|file| file.sync_all()).await
    }

    /// What the file system knows of the file ([`std::fs::File::metadata`]).
    ///
    /// # Errors
    ///
    /// The OS's, or a background write's.
    pub async fn metadata(&mut self) -> io::Result<std::fs::Metadata> {
        self.call(|file| file.metadata()).await
    }

    /// Truncates or extends the file to `len` bytes
    /// ([`std::fs::File::set_len`]); the position does not move.
    ///
    /// # Errors
    ///
    /// The OS's, or a background write's.
    pub async fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.call(move |file| file.set_len(len)).await
    }

    /// The `std` file, once every call in flight is done, with its
    /// position where this file's is.
    ///
    /// # Errors
    ///
    /// A background write's, or the loss of the file.
    pub async fn into_std(mut self) -> io::Result<std::fs::File> {
        poll_fn(|cx| self.poll_idle(cx, |_, _| None).map_ok(drop)).await?;
        let State::Idle(Some(mut inner)) = self.state else {
            return Err(io::Error::other("dinah: the file was lost"));
        };
        run_on_io_pool(move || inner.give_back_unread().map(|()| inner.std)).await
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Idle(Some(_)) => "idle",
            State::Idle(None) => "lost",
            State::Busy(_) => "busy",
        };
        f.debug_struct("File").field("state", &state).finish()
    }
}

#[cfg(feature = "futures-io")]
mod traits {
    //! `futures-io`'s traits on [`File`].
    use std::io::{self, SeekFrom};
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use super::File;

    impl futures_io::AsyncRead for File {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut [u8],
        ) -> Poll<io::Result<usize>> {
            File::poll_read(self.get_mut(), cx, buf)
        }
    }

    impl futures_io::AsyncWrite for File {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            File::poll_write(self.get_mut(), cx, buf)
        }
        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            File::poll_flush(self.get_mut(), cx)
        }
        /// Flushes; the file closes when dropped.
        fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            File::poll_flush(self.get_mut(), cx)
        }
    }

    impl futures_io::AsyncSeek for File {
        fn poll_seek(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            pos: SeekFrom,
        ) -> Poll<io::Result<u64>> {
            File::poll_seek(self.get_mut(), cx, pos)
        }
    }
}
