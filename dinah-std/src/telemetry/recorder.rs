//! [`Recorder`]: a bounded, timestamped, thread-tagged event log for many
//! runtimes at once, and its export as Chrome trace-event JSON (what
//! Perfetto and `chrome://tracing` load).

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dinah_core::TaskId;
use dinah_core::telemetry::{Sink, TraceEvent, TraceEventKind};

use crate::queue::CapacityError;

struct Entry {
    source: usize,
    thread: u64,
    event: TraceEvent,
}

#[derive(Default)]
struct Log {
    entries: Vec<Entry>,
    sources: Vec<String>,
    /// Process-wide thread numbers, in the order this recorder first saw
    /// each thread, with their names.
    threads: Vec<(u64, String)>,
    /// The names of named tasks, by source.
    names: HashMap<(usize, TaskId), &'static str>,
    rejected: u64,
}

/// A timeline of task events from any number of executors and pools, each
/// event kept with its source and the thread it happened on, for export as
/// a Chrome trace ([`write_chrome_trace`](Self::write_chrome_trace)).
///
/// Give each runtime its own [`source`](Self::source) as its sink. Events
/// are kept in the order they arrive, up to the capacity; beyond it they
/// are dropped and counted ([`rejected`](Self::rejected)), never
/// overwriting what was kept.
///
/// ```
/// use std::sync::Arc;
/// use dinah::LocalExecutor;
/// use dinah::executor::ExecutorConfig;
/// use dinah::telemetry::{Recorder, TelemetryConfig};
///
/// let timeline = Arc::new(Recorder::new(1024)?);
/// let executor = LocalExecutor::with_telemetry(
///     ExecutorConfig::default(),
///     TelemetryConfig::new().with_sink(timeline.source("main")),
/// )?;
/// executor.block_on(async { executor.try_spawn(async {}).unwrap().await.unwrap() });
/// let json = timeline.chrome_trace();
/// assert!(json.contains(r#""ph":"X""#)); // the task's poll
/// # Ok::<(), dinah::queue::CapacityError>(())
/// ```
pub struct Recorder {
    log: Mutex<Log>,
    capacity: usize,
}

/// One source of a [`Recorder`]: the [`Sink`] a runtime records into.
#[derive(Clone)]
pub struct SourceSink {
    recorder: Arc<Recorder>,
    source: usize,
}

impl fmt::Debug for SourceSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceSink")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

std::thread_local! {
    static THREAD: u64 = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
}

impl Sink for SourceSink {
    fn record(&self, event: TraceEvent) {
        let thread = THREAD.with(|n| *n);
        let mut log = crate::primitives::lock_std(&self.recorder.log);
        if log.entries.len() >= self.recorder.capacity {
            log.rejected = log.rejected.saturating_add(1);
            return;
        }
        if !log.threads.iter().any(|(n, _)| *n == thread) {
            let current = std::thread::current();
            let name = current.name().unwrap_or("unnamed").to_owned();
            log.threads.push((thread, name));
        }
        log.entries.push(Entry {
            source: self.source,
            thread,
            event,
        });
    }

    fn name_task(&self, task: TaskId, name: &'static str) {
        crate::primitives::lock_std(&self.recorder.log)
            .names
            .insert((self.source, task), name);
    }
}

/// Why a timeline could not be written.
#[derive(Debug)]
#[non_exhaustive]
pub enum ChromeTraceError {
    /// Writing failed.
    Io(io::Error),
}

impl fmt::Display for ChromeTraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(error) => write!(f, "writing the trace failed: {error}"),
        }
    }
}

impl std::error::Error for ChromeTraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(error) => Some(error),
        }
    }
}

impl From<io::Error> for ChromeTraceError {
    fn from(error: io::Error) -> Self {
        Self::Io(error)
    }
}

impl Recorder {
    /// A recorder keeping at most `capacity` events; storage is reserved as
    /// events arrive.
    ///
    /// # Errors
    ///
    /// [`CapacityError::Zero`] when `capacity` is zero.
    pub fn new(capacity: usize) -> Result<Self, CapacityError> {
        if capacity == 0 {
            return Err(CapacityError::Zero);
        }
        Ok(Self {
            log: Mutex::new(Log::default()),
            capacity,
        })
    }

    /// A sink for one runtime, named `name` in the export (a Chrome trace
    /// "process"). Each call makes a new source, even with a name used before.
    pub fn source(self: &Arc<Self>, name: &str) -> SourceSink {
        let mut log = crate::primitives::lock_std(&self.log);
        log.sources.push(name.to_owned());
        SourceSink {
            recorder: Arc::clone(self),
            source: log.sources.len() - 1,
        }
    }

    /// Events kept so far.
    #[must_use]
    pub fn len(&self) -> usize {
        crate::primitives::lock_std(&self.log).entries.len()
    }

    /// Whether no event was kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events dropped because the recorder was full.
    #[must_use]
    pub fn rejected(&self) -> u64 {
        crate::primitives::lock_std(&self.log).rejected
    }

    /// Every kept event with its source's name, oldest first.
    #[must_use]
    pub fn events(&self) -> Vec<(String, TraceEvent)> {
        let log = crate::primitives::lock_std(&self.log);
        log.entries
            .iter()
            .map(|e| (log.sources[e.source].clone(), e.event))
            .collect()
    }

    /// The timeline as Chrome trace-event JSON; see
    /// [`write_chrome_trace`](Self::write_chrome_trace).
    #[must_use]
    pub fn chrome_trace(&self) -> String {
        let log = crate::primitives::lock_std(&self.log);
        export(&log)
    }

    /// Writes the timeline as Chrome trace-event JSON, which Perfetto
    /// (ui.perfetto.dev) and `chrome://tracing` open:
    ///
    /// - each source is a process and each thread a thread, both named;
    /// - each poll is a complete (`X`) event named `poll` on its thread;
    ///   a pool job, which has no polls, is an `X` event named `run`;
    /// - each wait is an async span (`b`/`e`, category `wait`, keyed by
    ///   source and task id) from the submission or wake to the start or
    ///   poll that ended it, named `queued` (before the first start) or
    ///   `ready` (after a wake); a wait still open at the end stays open;
    /// - rejects, stale wakes, cancellation requests and steals (on the
    ///   thief's thread) are instants (`i`);
    /// - each source's count of open waits is a counter (`C`) named
    ///   `queue depth`.
    ///
    /// Timestamps are microseconds of the recording clock, as the events
    /// were stamped. Every `args` carries the task id.
    ///
    /// # Errors
    ///
    /// [`ChromeTraceError::Io`] when `out` fails.
    pub fn write_chrome_trace(&self, out: &mut impl io::Write) -> Result<(), ChromeTraceError> {
        let json = self.chrome_trace();
        out.write_all(json.as_bytes())?;
        Ok(())
    }
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

/// Nanoseconds as microseconds with three decimals.
struct Ts(u64);

impl fmt::Display for Ts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1_000, self.0 % 1_000)
    }
}

fn quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// What a task is waiting for, per source and task.
#[derive(Default)]
struct TaskTrack {
    /// The name of its open wait span, if any.
    waiting: Option<&'static str>,
    polls: u64,
    /// The thread and start of its run, for a pool job (no polls).
    run: Option<(u64, u64)>,
    /// The start of its wait on a timer, if it waits on one.
    timer: Option<u64>,
    /// The start of its wait on a socket, if it waits on one.
    io: Option<u64>,
}

/// Builds the JSON text, one event per line.
struct Json {
    out: String,
    first: bool,
}

impl Json {
    fn event(&mut self, body: &str) {
        if !self.first {
            self.out.push_str(",\n");
        }
        self.first = false;
        self.out.push('{');
        self.out.push_str(body);
        self.out.push('}');
    }

    fn metadata(&mut self, what: &str, pid: usize, tid: Option<usize>, name: &str) {
        let mut body = format!("\"name\":\"{what}\",\"ph\":\"M\",\"pid\":{pid}");
        if let Some(tid) = tid {
            let _ = write!(body, ",\"tid\":{tid}");
        }
        body.push_str(",\"args\":{\"name\":");
        quoted(&mut body, name);
        body.push('}');
        self.event(&body);
    }
}

/// Where one event happened, in the export's terms.
#[derive(Clone, Copy)]
struct At {
    pid: usize,
    tid: usize,
    task: u64,
    ts: u64,
    /// The task's name, if it has one.
    label: Option<&'static str>,
}

impl At {
    /// The task's arguments: its number, and its name if it has one.
    fn args(self) -> String {
        let mut args = format!("\"task\":{}", self.task);
        if let Some(label) = self.label {
            args.push_str(",\"task_name\":");
            quoted(&mut args, label);
        }
        args
    }

    fn wait(self, json: &mut Json, phase: char, name: &str) {
        let Self {
            pid, tid, task, ts, ..
        } = self;
        json.event(&format!(
            "\"name\":\"{name}\",\"cat\":\"wait\",\"ph\":\"{phase}\",\"id\":\"{pid}:{task}\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"args\":{{{}}}",
            Ts(ts),
            self.args()
        ));
    }

    fn instant(self, json: &mut Json, name: &str) {
        let Self { pid, tid, ts, .. } = self;
        json.event(&format!(
            "\"name\":\"{name}\",\"ph\":\"i\",\"s\":\"t\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"args\":{{{}}}",
            Ts(ts),
            self.args()
        ));
    }

    /// A slice of `kind` (its category); named after the task when the
    /// task has a name and the slice is its poll or run.
    fn complete(self, json: &mut Json, kind: &str, start: u64, extra: &str) {
        let Self { pid, tid, ts, .. } = self;
        let mut name = String::new();
        match self.label {
            Some(label) if kind == "poll" || kind == "run" => quoted(&mut name, label),
            _ => {
                name.push('"');
                name.push_str(kind);
                name.push('"');
            }
        }
        json.event(&format!(
            "\"name\":{name},\"cat\":\"{kind}\",\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{{{}{extra}}}",
            Ts(start),
            Ts(ts.saturating_sub(start)),
            self.args()
        ));
    }
}

fn export(log: &Log) -> String {
    let mut json = Json {
        out: String::from("{\"traceEvents\":[\n"),
        first: true,
    };
    for (index, name) in log.sources.iter().enumerate() {
        json.metadata("process_name", index + 1, None, name);
    }
    let tid = |thread: u64| {
        log.threads
            .iter()
            .position(|(n, _)| *n == thread)
            .map_or(0, |i| i + 1)
    };
    let mut pairs: Vec<(usize, u64)> = Vec::new();
    for entry in &log.entries {
        if !pairs.contains(&(entry.source, entry.thread)) {
            pairs.push((entry.source, entry.thread));
        }
    }
    for &(source, thread) in &pairs {
        let name = log
            .threads
            .iter()
            .find(|(n, _)| *n == thread)
            .map_or("unnamed", |(_, name)| name.as_str());
        json.metadata("thread_name", source + 1, Some(tid(thread)), name);
    }
    let mut tasks: HashMap<(usize, TaskId), TaskTrack> = HashMap::new();
    let mut depth: Vec<u64> = vec![0; log.sources.len()];
    // Open polls per (source, thread): task and start.
    let mut polls: HashMap<(usize, u64), Vec<(TaskId, u64)>> = HashMap::new();
    for entry in &log.entries {
        let TraceEvent { task, kind, at } = entry.event;
        let here = At {
            pid: entry.source + 1,
            tid: tid(entry.thread),
            task: task.get(),
            ts: at,
            label: log.names.get(&(entry.source, task)).copied(),
        };
        let track = tasks.entry((entry.source, task)).or_default();
        let before = depth[entry.source];
        let waits = &mut depth[entry.source];
        let mut open = |track: &mut TaskTrack, json: &mut Json, name: &'static str| {
            if track.waiting.is_none() {
                track.waiting = Some(name);
                here.wait(json, 'b', name);
                *waits += 1;
            }
        };
        // A wait on a timer or a socket ends with the task's next wake (or
        // its end).
        if matches!(
            kind,
            TraceEventKind::Woken
                | TraceEventKind::SelfWoken
                | TraceEventKind::Completed
                | TraceEventKind::Failed
                | TraceEventKind::CancellationAcknowledged
        ) {
            if let Some(start) = track.timer.take() {
                here.complete(&mut json, "timer wait", start, "");
            }
            if let Some(start) = track.io.take() {
                here.complete(&mut json, "io wait", start, "");
            }
        }
        match kind {
            TraceEventKind::TimerWait => track.timer = Some(at),
            TraceEventKind::IoWait => track.io = Some(at),
            TraceEventKind::Submitted => open(track, &mut json, "queued"),
            TraceEventKind::Woken | TraceEventKind::SelfWoken => open(track, &mut json, "ready"),
            TraceEventKind::Started
            | TraceEventKind::PollStarted
            | TraceEventKind::Completed
            | TraceEventKind::Failed
            | TraceEventKind::CancellationAcknowledged => {
                if let Some(name) = track.waiting.take() {
                    here.wait(&mut json, 'e', name);
                    depth[entry.source] -= 1;
                }
                match kind {
                    TraceEventKind::Started => track.run = Some((entry.thread, at)),
                    TraceEventKind::PollStarted => {
                        track.polls += 1;
                        polls
                            .entry((entry.source, entry.thread))
                            .or_default()
                            .push((task, at));
                    }
                    _ => {
                        if let Some((thread, start)) = track.run.take()
                            && track.polls == 0
                            && thread == entry.thread
                            && kind != TraceEventKind::CancellationAcknowledged
                        {
                            let outcome = if kind == TraceEventKind::Completed {
                                ",\"outcome\":\"completed\""
                            } else {
                                ",\"outcome\":\"failed\""
                            };
                            here.complete(&mut json, "run", start, outcome);
                        }
                        if kind == TraceEventKind::CancellationAcknowledged {
                            here.instant(&mut json, "cancelled");
                        }
                        tasks.remove(&(entry.source, task));
                    }
                }
            }
            TraceEventKind::PollEnded => {
                let open = polls.entry((entry.source, entry.thread)).or_default();
                if let Some(at) = open.iter().rposition(|(t, _)| *t == task) {
                    let (_, start) = open.remove(at);
                    here.complete(&mut json, "poll", start, "");
                }
            }
            TraceEventKind::Rejected => {
                here.instant(&mut json, "rejected");
                tasks.remove(&(entry.source, task));
            }
            TraceEventKind::StaleWake => here.instant(&mut json, "stale wake"),
            TraceEventKind::Stolen => here.instant(&mut json, "stolen"),
            TraceEventKind::CancellationRequested => here.instant(&mut json, "cancel requested"),
        }
        if depth[entry.source] != before {
            json.event(&format!(
                "\"name\":\"queue depth\",\"ph\":\"C\",\"pid\":{},\"ts\":{},\"args\":{{\"waiting\":{}}}",
                here.pid,
                Ts(at),
                depth[entry.source]
            ));
        }
    }
    let mut out = json.out;
    out.push_str("\n],\"displayTimeUnit\":\"ns\"}\n");
    out
}
