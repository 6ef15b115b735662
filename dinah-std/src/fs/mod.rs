//! Files without blocking an executor's thread: the common operations on
//! paths ([`read`], [`write()`], [`metadata`], [`read_dir`], [`remove_file`],
//! [`rename`] and the rest) and an async [`File`].
//!
//! Operating systems offer no readiness for regular files, so each
//! operation is a blocking call from `std::fs`, run on the process's I/O
//! pool ([`IO_POOL_THREADS`](crate::pool::IO_POOL_THREADS) threads,
//! [`IO_POOL_QUEUE`](crate::pool::IO_POOL_QUEUE) queued;
//! [`io_pool_stats`](crate::pool::io_pool_stats) reports it), never on the
//! executor's thread. A call past the pool's threads and queue waits for
//! room: it is not refused.
//!
//! # Cancellation
//!
//! A blocking call cannot be interrupted. Dropping one of these futures
//! before it completes does not undo or stop its call: the call runs to its
//! end on the pool and its result is dropped. A `remove_file` dropped
//! while it waits may still remove the file; a `write` may still write it.
//! For [`File`]'s writes, see its documentation.
//!
//! # Example
//!
//! ```
//! use dinah::LocalExecutor;
//!
//! # if cfg!(miri) { return Ok(()); } // Miri's file system is a sketch.
//! let dir = std::env::temp_dir().join(format!("dinah-fs-doc-{}", std::process::id()));
//! let executor = LocalExecutor::new();
//! executor.block_on(async {
//!     dinah::fs::create_dir_all(&dir).await?;
//!     let path = dir.join("greeting.txt");
//!     dinah::fs::write(&path, "hello").await?;
//!     assert_eq!(dinah::fs::read_to_string(&path).await?, "hello");
//!     assert_eq!(dinah::fs::metadata(&path).await?.len(), 5);
//!     dinah::fs::remove_dir_all(&dir).await
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
#![forbid(unsafe_code)]

mod file;

pub use file::File;

use std::fs::{DirEntry, Metadata, Permissions};
use std::io;
use std::path::{Path, PathBuf};

use crate::pool::run_on_io_pool;

/// Runs `call` on `path` (owned) on the I/O pool.
async fn on_path<T: Send + 'static>(
    path: impl AsRef<Path>,
    call: impl FnOnce(PathBuf) -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let path = path.as_ref().to_owned();
    run_on_io_pool(move || call(path)).await
}

/// The whole file at `path` ([`std::fs::read`]).
///
/// # Errors
///
/// The OS's (`NotFound`, `PermissionDenied`, ...).
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    on_path(path, std::fs::read).await
}

/// The whole file at `path` as UTF-8 ([`std::fs::read_to_string`]).
///
/// # Errors
///
/// The OS's; `InvalidData` if it is not UTF-8.
pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    on_path(path, std::fs::read_to_string).await
}

/// Writes `contents` as the whole file at `path`, creating it or
/// truncating it ([`std::fs::write`]). `contents` is copied first.
///
/// # Errors
///
/// The OS's.
pub async fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let contents = contents.as_ref().to_vec();
    on_path(path, move |path| std::fs::write(path, contents)).await
}

/// What the file system knows of `path`, following symbolic links
/// ([`std::fs::metadata`]).
///
/// # Errors
///
/// The OS's.
pub async fn metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    on_path(path, std::fs::metadata).await
}

/// What the file system knows of `path` itself, not following a symbolic
/// link ([`std::fs::symlink_metadata`]).
///
/// # Errors
///
/// The OS's.
pub async fn symlink_metadata(path: impl AsRef<Path>) -> io::Result<Metadata> {
    on_path(path, std::fs::symlink_metadata).await
}

/// Whether `path` exists, `Err` when that cannot be told
/// ([`std::fs::exists`]).
///
/// # Errors
///
/// The OS's, other than `NotFound`.
pub async fn try_exists(path: impl AsRef<Path>) -> io::Result<bool> {
    on_path(path, |path| path.try_exists()).await
}

/// The entries of the directory at `path`, read whole on the pool
/// ([`std::fs::read_dir`]), in the order the OS gives them (no order is
/// promised); `.` and `..` are not among them.
///
/// # Errors
///
/// The OS's, for the directory or any entry.
pub async fn read_dir(path: impl AsRef<Path>) -> io::Result<Vec<DirEntry>> {
    on_path(path, |path| std::fs::read_dir(path)?.collect()).await
}

/// Makes the directory `path`; its parent must exist
/// ([`std::fs::create_dir`]).
///
/// # Errors
///
/// The OS's (`AlreadyExists`, `NotFound` for the parent).
pub async fn create_dir(path: impl AsRef<Path>) -> io::Result<()> {
    on_path(path, std::fs::create_dir).await
}

/// Makes the directory `path` and any parents it lacks
/// ([`std::fs::create_dir_all`]).
///
/// # Errors
///
/// The OS's.
pub async fn create_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    on_path(path, std::fs::create_dir_all).await
}

/// Removes the file at `path` ([`std::fs::remove_file`]).
///
/// # Errors
///
/// The OS's (`NotFound`, `IsADirectory`, ...).
pub async fn remove_file(path: impl AsRef<Path>) -> io::Result<()> {
    on_path(path, std::fs::remove_file).await
}

/// Removes the empty directory at `path` ([`std::fs::remove_dir`]).
///
/// # Errors
///
/// The OS's (`DirectoryNotEmpty`, ...).
pub async fn remove_dir(path: impl AsRef<Path>) -> io::Result<()> {
    on_path(path, std::fs::remove_dir).await
}

/// Removes the directory at `path` and everything in it
/// ([`std::fs::remove_dir_all`]).
///
/// # Errors
///
/// The OS's.
pub async fn remove_dir_all(path: impl AsRef<Path>) -> io::Result<()> {
    on_path(path, std::fs::remove_dir_all).await
}

/// Renames `from` to `to`, replacing `to` if it is a file
/// ([`std::fs::rename`]).
///
/// # Errors
///
/// The OS's.
pub async fn rename(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<()> {
    let to = to.as_ref().to_owned();
    on_path(from, move |from| std::fs::rename(from, to)).await
}

/// Copies the contents and permissions of the file `from` to `to`: the
/// bytes copied ([`std::fs::copy`]).
///
/// # Errors
///
/// The OS's.
pub async fn copy(from: impl AsRef<Path>, to: impl AsRef<Path>) -> io::Result<u64> {
    let to = to.as_ref().to_owned();
    on_path(from, move |from| std::fs::copy(from, to)).await
}

/// `path` made absolute, with every link and `..` resolved
/// ([`std::fs::canonicalize`]).
///
/// # Errors
///
/// The OS's.
pub async fn canonicalize(path: impl AsRef<Path>) -> io::Result<PathBuf> {
    on_path(path, std::fs::canonicalize).await
}

/// Sets the permissions of `path` ([`std::fs::set_permissions`]).
///
/// # Errors
///
/// The OS's.
pub async fn set_permissions(path: impl AsRef<Path>, permissions: Permissions) -> io::Result<()> {
    on_path(path, move |path| {
        std::fs::set_permissions(path, permissions)
    })
    .await
}
