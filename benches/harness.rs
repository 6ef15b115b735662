//! The benchmark harness shared by `benches/*.rs`: every contender of a
//! case runs once per round, rounds interleave, and the report gives each
//! contender's median and its ratio to every baseline measured in the same
//! rounds. On a shared, noisy machine that pairing matters more than
//! criterion's statistics, and ratios are what the targets are stated in.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// One contender of a case: runs the work `reps` times and returns the time
/// of one run (the total divided by `reps`).
pub(crate) struct Contender<'a> {
    name: String,
    baseline: bool,
    run: Box<dyn FnMut() -> Duration + 'a>,
    samples: Vec<Duration>,
}

impl<'a> Contender<'a> {
    pub(crate) fn new(
        name: impl Into<String>,
        baseline: bool,
        run: impl FnMut() -> Duration + 'a,
    ) -> Self {
        Self {
            name: name.into(),
            baseline,
            run: Box::new(run),
            samples: Vec::new(),
        }
    }

    pub(crate) fn median(&self) -> Duration {
        let mut sorted = self.samples.clone();
        sorted.sort_unstable();
        sorted[sorted.len() / 2]
    }
}

/// How long every case warms up, untimed, before its samples.
const WARM_UP: Duration = Duration::from_millis(50);

/// Runs the case and returns each contender's name and median.
pub(crate) fn run_case(
    title: &str,
    tasks: usize,
    samples: usize,
    contenders: &mut [Contender<'_>],
) -> Vec<(String, Duration)> {
    // Untimed warm-up rounds (at least one, and at least `WARM_UP` of
    // them all: a sample of a fraction of a millisecond taken on a core
    // that has just woken runs at its slow clock), then interleaved rounds.
    let warming = Instant::now();
    loop {
        for contender in contenders.iter_mut() {
            (contender.run)();
        }
        if warming.elapsed() >= WARM_UP {
            break;
        }
    }
    for _ in 0..samples {
        for contender in contenders.iter_mut() {
            let sample = (contender.run)();
            contender.samples.push(sample);
        }
    }

    println!("\n## {title} ({tasks} tasks, median of {samples})");
    let baselines: Vec<(String, Duration)> = contenders
        .iter()
        .filter(|c| c.baseline)
        .map(|c| (c.name.clone(), c.median()))
        .collect();
    for contender in contenders.iter() {
        let median = contender.median();
        let nanos = median.as_secs_f64() * 1e9;
        let per_task = nanos / tasks as f64;
        let per_second = tasks as f64 / median.as_secs_f64();
        let mut line = format!(
            "{:<34} median {:>12} | {:>12.3} ns/task | {:>14.0} tasks/s",
            contender.name,
            format_duration(median),
            per_task,
            per_second
        );
        if !contender.baseline {
            for (name, base) in &baselines {
                let ratio = median.as_secs_f64() / base.as_secs_f64();
                line.push_str(&format!(" | {ratio:.3}x {name}"));
                if name.contains("sequential") {
                    line.push_str(&format!(" = speedup {:.3}x", 1.0 / ratio));
                }
            }
        }
        println!("{line}");
    }
    let raw: Vec<String> = contenders
        .iter()
        .map(|c| {
            let nanos: Vec<String> = c.samples.iter().map(|s| s.as_nanos().to_string()).collect();
            format!("{}=[{}]", c.name, nanos.join(","))
        })
        .collect();
    println!("raw ns: {}", raw.join(" "));
    contenders
        .iter()
        .map(|c| (c.name.clone(), c.median()))
        .collect()
}

pub(crate) fn format_duration(d: Duration) -> String {
    let nanos = d.as_secs_f64() * 1e9;
    if nanos < 1e3 {
        format!("{nanos:.1} ns")
    } else if nanos < 1e6 {
        format!("{:.3} us", nanos / 1e3)
    } else if nanos < 1e9 {
        format!("{:.3} ms", nanos / 1e6)
    } else {
        format!("{:.3} s", nanos / 1e9)
    }
}

/// The median of the contender whose name starts with `prefix`.
pub(crate) fn median_of(results: &[(String, Duration)], prefix: &str) -> f64 {
    results
        .iter()
        .find(|(name, _)| name.starts_with(prefix))
        .map(|(_, median)| median.as_secs_f64())
        .expect("contender present")
}

/// Prints one performance target: the measured ratio against its limit.
pub(crate) fn target(description: &str, ratio: f64, holds: bool) {
    let verdict = if holds { "met" } else { "MISSED" };
    println!("{description}: {ratio:.3} -> {verdict}");
}

/// What a benchmark binary was asked to do.
pub(crate) struct Options {
    /// Timed samples per contender (`--samples N`, 11 by default).
    pub(crate) samples: usize,
    /// Run only cases whose name contains this (the first free argument).
    pub(crate) filter: Option<String>,
    /// `--callgrind CONTENDER TIMES`: run one untimed workload and exit.
    pub(crate) callgrind: Option<(String, usize)>,
    /// `--loaded`: run every case beside one busy thread per core (see
    /// [`Load`]).
    pub(crate) loaded: bool,
    /// `--workers N`: the worker count of the multi-thread cases.
    pub(crate) workers: Option<usize>,
}

/// A background load: one thread per core spinning on a flag until the
/// load is dropped. Both contenders of a case run beside it.
pub(crate) struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<u64>>,
}

impl Load {
    /// Starts one busy thread per core the OS reports.
    pub(crate) fn start() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..cores)
            .map(|_| {
                let stop = std::sync::Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut spins = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        spins = std::hint::black_box(spins.wrapping_add(1));
                    }
                    spins
                })
            })
            .collect();
        Self { stop, threads }
    }

    pub(crate) fn threads(&self) -> usize {
        self.threads.len()
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Options {
    /// Reads the command line `cargo bench` passes on.
    pub(crate) fn from_args() -> Self {
        let mut options = Self {
            samples: 11,
            filter: None,
            callgrind: None,
            loaded: false,
            workers: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--samples" => {
                    options.samples = args
                        .next()
                        .and_then(|n| n.parse().ok())
                        .filter(|&n| n > 0)
                        .expect("--samples takes a positive number");
                }
                "--callgrind" => {
                    let contender = args.next().expect("--callgrind CONTENDER TIMES");
                    let times = args
                        .next()
                        .and_then(|n| n.parse().ok())
                        .expect("--callgrind CONTENDER TIMES");
                    options.callgrind = Some((contender, times));
                }
                "--loaded" => options.loaded = true,
                "--workers" => {
                    options.workers = args
                        .next()
                        .and_then(|n| n.parse().ok())
                        .filter(|&n| n > 0)
                        .map(Some)
                        .expect("--workers takes a positive number");
                }
                // `cargo bench` passes this to every harness.
                "--bench" => {}
                other if !other.starts_with('-') => options.filter = Some(other.to_owned()),
                _ => {}
            }
        }
        options
    }

    /// Whether the case called `name` is to run.
    pub(crate) fn wants(&self, name: &str) -> bool {
        self.filter.as_deref().is_none_or(|f| name.contains(f))
    }
}

/// Times `reps` runs of `body`, each with fresh input from `prepare` built
/// before the clock starts, and returns the time of one run. `check` sees
/// every input and output afterwards, outside the timing.
pub(crate) fn timed<I, O>(
    reps: usize,
    mut prepare: impl FnMut() -> I,
    mut body: impl FnMut(&mut I) -> O,
    mut check: impl FnMut(I, O),
) -> Duration {
    let mut inputs: Vec<I> = (0..reps).map(|_| prepare()).collect();
    let start = Instant::now();
    let outputs: Vec<O> = inputs.iter_mut().map(&mut body).collect();
    let elapsed = start.elapsed();
    for (input, output) in inputs.into_iter().zip(outputs) {
        check(input, output);
    }
    elapsed / reps as u32
}
