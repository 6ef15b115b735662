//! Files: `dinah::fs` against tokio's `fs`, in the same run. Both run each
//! call on a blocking pool (dinah's process-wide I/O pool, tokio's
//! runtime's blocking pool), from a current-thread executor.
//!
//! - `read_1mib`: one `read` of a 1 MiB file, 20 times per sample.
//! - `read_10k_small`: 10,000 files of 100 bytes, each read by a task of
//!   its own, all spawned at once (the pools' queues fill and drain).
//!
//! `cargo bench --bench fs [-- FILTER] [--samples N]`. Files live under
//! the system's temporary directory and are removed at the end.

use std::path::{Path, PathBuf};
use std::time::Instant;

mod harness;
use harness::{Contender, Options, median_of, run_case, target};

use dinah::LocalExecutor;

const BIG: usize = 1 << 20;
const BIG_READS: u32 = 20;
const SMALL_FILES: usize = 10_000;
const SMALL: usize = 100;

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
}

/// The case's files, removed when dropped.
struct Files(PathBuf);

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn files() -> Files {
    let dir = std::env::temp_dir().join(format!("dinah-bench-fs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("small")).expect("a temporary directory");
    std::fs::write(dir.join("big"), vec![7u8; BIG]).expect("the big file");
    for n in 0..SMALL_FILES {
        std::fs::write(small(&dir, n), [n as u8; SMALL]).expect("a small file");
    }
    Files(dir)
}

fn small(dir: &Path, n: usize) -> PathBuf {
    dir.join("small").join(n.to_string())
}

fn read_big(options: &Options, dir: &Path) -> Option<f64> {
    if !options.wants("read_1mib") {
        return None;
    }
    let path = dir.join("big");
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    let mut contenders = vec![
        Contender::new("dinah fs::read", false, || {
            dinah.block_on(async {
                let start = Instant::now();
                for _ in 0..BIG_READS {
                    assert_eq!(dinah::fs::read(&path).await.expect("read").len(), BIG);
                }
                start.elapsed() / BIG_READS
            })
        }),
        Contender::new("tokio fs::read", true, || {
            tokio.block_on(async {
                let start = Instant::now();
                for _ in 0..BIG_READS {
                    assert_eq!(tokio::fs::read(&path).await.expect("read").len(), BIG);
                }
                start.elapsed() / BIG_READS
            })
        }),
    ];
    let results = run_case(
        "read_1mib (time per read)",
        1,
        options.samples,
        &mut contenders,
    );
    Some(median_of(&results, "dinah") / median_of(&results, "tokio"))
}

fn read_small(options: &Options, dir: &Path) -> Option<f64> {
    if !options.wants("read_10k_small") {
        return None;
    }
    let dinah = LocalExecutor::new();
    let tokio = tokio_runtime();
    let mut contenders = vec![
        Contender::new("dinah fs::read, a task each", false, || {
            let start = Instant::now();
            let handles: Vec<_> = (0..SMALL_FILES)
                .map(|n| {
                    let path = small(dir, n);
                    dinah
                        .try_spawn(
                            async move { dinah::fs::read(path).await.map(|bytes| bytes.len()) },
                        )
                        .expect("no cap")
                })
                .collect();
            dinah.block_on(async {
                for handle in handles {
                    assert_eq!(handle.await.expect("joined").expect("read"), SMALL);
                }
            });
            start.elapsed()
        }),
        Contender::new("tokio fs::read, a task each", true, || {
            tokio.block_on(async {
                let start = Instant::now();
                let handles: Vec<_> = (0..SMALL_FILES)
                    .map(|n| tokio::spawn(tokio::fs::read(small(dir, n))))
                    .collect();
                for handle in handles {
                    assert_eq!(handle.await.expect("joined").expect("read").len(), SMALL);
                }
                start.elapsed()
            })
        }),
    ];
    let results = run_case(
        "read_10k_small (time for all 10,000)",
        SMALL_FILES,
        options.samples,
        &mut contenders,
    );
    Some(median_of(&results, "dinah") / median_of(&results, "tokio"))
}

fn main() {
    let options = Options::from_args();
    println!("# dinah fs benchmarks");
    let files = files();
    let big = read_big(&options, &files.0);
    let small = read_small(&options, &files.0);
    println!("\n## targets (medians from the same run)");
    if let Some(ratio) = big {
        target(
            "read_1mib: dinah / tokio (at most 1.0)",
            ratio,
            ratio <= 1.0,
        );
    }
    if let Some(ratio) = small {
        target(
            "read_10k_small: dinah / tokio (at most 1.0)",
            ratio,
            ratio <= 1.0,
        );
    }
}
