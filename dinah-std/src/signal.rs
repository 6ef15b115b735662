//! The process's signals as futures, through the executor's reactor:
//! [`ctrl_c`] for an interrupt, and [`Signal`] for any signal a Unix
//! process may catch (SIGTERM from a supervisor, SIGHUP to reload).
//!
//! Delivery rests on `signal-hook`: its handler, the only code that runs
//! inside the signal, writes a byte to a pipe per listener; the pipe's read
//! end is registered with the reactor of the executor that made the
//! listener, so a waiting task is woken like one waiting on a socket, and
//! is named as waiting on `signal SIGTERM` in the executor's diagnosis.
//!
//! # What listening changes
//!
//! As with any handler: once a signal has been listened for, its default
//! action (for SIGINT and SIGTERM, ending the process) no longer happens,
//! for the rest of the process's life, even after every listener is
//! dropped. A service that listens for SIGTERM must end itself when it
//! arrives.
//!
//! # Guarantees
//!
//! - A signal that arrives while a [`Signal`] exists is seen by that
//!   listener's next [`recv`](Signal::recv), even when no task was waiting
//!   at the time; every listener of the same signal sees it.
//! - Several arrivals before a `recv` may count as one, as the operating
//!   system itself may merge them: `recv` says that the signal came at
//!   least once since the last `recv`, not how often.
//! - A signal that arrived before the listener was made is not seen.
//!
//! # Example
//!
//! A service that stops on SIGTERM (here it sends the signal to itself):
//!
//! ```
//! use dinah::LocalExecutor;
//! use dinah::signal::{Signal, SignalKind};
//!
//! # if cfg!(miri) { return Ok(()); } // Miri runs no signal handlers.
//! let executor = LocalExecutor::new();
//! executor.block_on(async {
//!     let mut terminate = Signal::new(SignalKind::terminate())?;
//!     dinah::signal::raise(SignalKind::terminate())?;
//!     terminate.recv().await;
//!     // ... drain and shut down here ...
//!     Ok::<(), std::io::Error>(())
//! })?;
//! # Ok::<(), std::io::Error>(())
//! ```
#![forbid(unsafe_code)]

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

use signal_hook::consts::signal as numbers;
use signal_hook_mio::v1_0::Signals;

use crate::io::Interest;
use crate::net::Registered;

/// A signal to listen for: one of the common ones by name, or any number
/// the platform defines ([`from_raw`](Self::from_raw)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SignalKind(i32);

impl SignalKind {
    /// SIGINT: Ctrl-C at a terminal.
    #[must_use]
    pub const fn interrupt() -> Self {
        Self(numbers::SIGINT)
    }

    /// SIGTERM: a supervisor (systemd, Kubernetes, `kill`) asks the
    /// process to stop.
    #[must_use]
    pub const fn terminate() -> Self {
        Self(numbers::SIGTERM)
    }

    /// SIGHUP: the terminal went away, or (by convention) reload the
    /// configuration.
    #[must_use]
    pub const fn hangup() -> Self {
        Self(numbers::SIGHUP)
    }

    /// SIGQUIT: Ctrl-\ at a terminal.
    #[must_use]
    pub const fn quit() -> Self {
        Self(numbers::SIGQUIT)
    }

    /// SIGUSR1, for the program's own use.
    #[must_use]
    pub const fn user_defined1() -> Self {
        Self(numbers::SIGUSR1)
    }

    /// SIGUSR2, for the program's own use.
    #[must_use]
    pub const fn user_defined2() -> Self {
        Self(numbers::SIGUSR2)
    }

    /// Any signal by its number. Whether a listener can be made for it is
    /// checked by [`Signal::new`].
    #[must_use]
    pub const fn from_raw(number: i32) -> Self {
        Self(number)
    }

    /// Its number.
    #[must_use]
    pub const fn as_raw(self) -> i32 {
        self.0
    }

    /// Its name (`"SIGTERM"`), or `"signal N"` for one without a common
    /// name here.
    #[must_use]
    pub fn name(self) -> String {
        let name = match self.0 {
            numbers::SIGINT => "SIGINT",
            numbers::SIGTERM => "SIGTERM",
            numbers::SIGHUP => "SIGHUP",
            numbers::SIGQUIT => "SIGQUIT",
            numbers::SIGUSR1 => "SIGUSR1",
            numbers::SIGUSR2 => "SIGUSR2",
            numbers::SIGALRM => "SIGALRM",
            numbers::SIGCHLD => "SIGCHLD",
            numbers::SIGPIPE => "SIGPIPE",
            numbers::SIGWINCH => "SIGWINCH",
            other => return format!("signal {other}"),
        };
        name.to_owned()
    }
}

impl fmt::Display for SignalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The pipe a listener reads, as a `mio` source. Its read needs `&mut`;
/// the reactor's operation loop lends `&`, so it sits behind a mutex that
/// only this listener's own calls take.
struct Pipe(Mutex<Signals>);

impl Pipe {
    fn signals(&mut self) -> &mut Signals {
        self.0.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the signal came since the last look; `WouldBlock` if not.
    fn take(&self) -> io::Result<()> {
        let mut signals = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // One signal per listener: any pending one is ours. The pipe is
        // drained by `pending`, so every arrival so far counts as one.
        if signals.pending().next().is_some() {
            Ok(())
        } else {
            Err(io::ErrorKind::WouldBlock.into())
        }
    }
}

impl mio::event::Source for Pipe {
    fn register(
        &mut self,
        registry: &mio::Registry,
        token: mio::Token,
        interests: mio::Interest,
    ) -> io::Result<()> {
        self.signals().register(registry, token, interests)
    }

    fn reregister(
        &mut self,
        registry: &mio::Registry,
        token: mio::Token,
        interests: mio::Interest,
    ) -> io::Result<()> {
        self.signals().reregister(registry, token, interests)
    }

    fn deregister(&mut self, registry: &mio::Registry) -> io::Result<()> {
        self.signals().deregister(registry)
    }
}

/// A listener for one signal, on the reactor of the executor that made it.
///
/// Made with [`Signal::new`] inside a task or `block_on` of a
/// `LocalExecutor` or `MultiExecutor`; [`recv`](Self::recv) waits for the
/// next arrival without blocking the thread. Dropping it stops this
/// listener (not the handler: see the [module](self) on what listening
/// changes). See the module's guarantees.
pub struct Signal {
    kind: SignalKind,
    inner: Registered<Pipe>,
}

impl Signal {
    /// Listens for `kind` from now on.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] for a signal that cannot be caught
    /// or whose handling would break the program (SIGKILL, SIGSTOP,
    /// SIGSEGV, SIGILL, SIGFPE, as `signal-hook` refuses them), or a number
    /// the platform does not have; the operating system's error; or an error when no executor
    /// was made or entered on this thread.
    pub fn new(kind: SignalKind) -> io::Result<Self> {
        // signal-hook keeps 128 flags: a number past them would panic
        // there. Numbers below that which the platform lacks are refused by
        // the operating system (mapped below).
        if signal_hook::consts::FORBIDDEN.contains(&kind.0) || !(1..128).contains(&kind.0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("dinah: {kind} cannot be listened for"),
            ));
        }
        // The executor first: without one, no handler is installed.
        let reactor = crate::runtime::context::current_reactor()?;
        let signals = Signals::new([kind.0]).map_err(|error| {
            if error.kind() == io::ErrorKind::InvalidInput {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("dinah: {kind} cannot be listened for: {error}"),
                )
            } else {
                error
            }
        })?;
        let inner = Registered::with(reactor, Pipe(Mutex::new(signals)), format!("signal {kind}"))?;
        Ok(Self { kind, inner })
    }

    /// The signal it listens for.
    #[must_use]
    pub fn kind(&self) -> SignalKind {
        self.kind
    }

    /// Waits until the signal has arrived since the last `recv` (or since
    /// the listener was made). Always `Some(())`: the `Option` keeps the
    /// shape of a stream's next item.
    ///
    /// Cancel safe: dropped before it completes, no arrival is lost; the
    /// next `recv` sees it.
    pub async fn recv(&mut self) -> Option<()> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// [`recv`](Self::recv) as a poll, the form a stream adapter needs:
    /// `Pending` until the signal has arrived, with `cx`'s waker among the
    /// listener's waiters until it does.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        match self.inner.poll_io(cx, Interest::Read, Pipe::take) {
            Poll::Ready(Ok(())) => Poll::Ready(Some(())),
            // Reading a pipe this listener owns fails only if the
            // operating system fails it; the listener can no longer hear
            // anything, which a stream says by ending.
            Poll::Ready(Err(_)) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl fmt::Debug for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signal").field("kind", &self.kind).finish()
    }
}

/// Waits for the next Ctrl-C (SIGINT) from the moment it is first polled.
///
/// Each call makes a listener of its own for as long as it waits. To be
/// sure an interrupt that comes between two waits is not missed, keep a
/// [`Signal`] for [`SignalKind::interrupt`] instead.
///
/// # Errors
///
/// As [`Signal::new`].
pub async fn ctrl_c() -> io::Result<()> {
    Signal::new(SignalKind::interrupt())?.recv().await;
    Ok(())
}

/// Sends `kind` to this process (for tests, and for a program that stops
/// itself the way its supervisor would).
///
/// # Errors
///
/// The operating system's.
pub fn raise(kind: SignalKind) -> io::Result<()> {
    signal_hook::low_level::raise(kind.0)
}
