//! The executor's diagnosis: [`ExecProbe::diagnose`], which reads every
//! slot's stamps and names what is not progressing, and why.
#![forbid(unsafe_code)]

use std::sync::atomic::Ordering;
use std::time::Duration;

use dinah_core::TaskId;

use super::probe::ExecProbe;
use crate::primitives::lock_std;
use crate::telemetry::{Thresholds, Verdict};

impl ExecProbe {
    pub(super) fn diagnose(
        &self,
        thresholds: &Thresholds,
        ingress: (usize, usize),
    ) -> Vec<Verdict> {
        let now = self.probe.now();
        let age = |at: u64| now.saturating_sub(at);
        let over = |at: u64, limit: Duration| age(at) > Thresholds::nanos(limit);
        let polling = self.polling.read();
        let blocked = polling.filter(|&(_, start)| over(start, thresholds.blocked));
        let mut verdicts = Vec::new();
        let mut ready: Vec<(u64, TaskId, Option<&'static str>)> = Vec::new();
        let mut blocked_name = None;
        let mut lines: Vec<(Option<&'static str>, usize, u64)> = Vec::new();
        // A poll running longer than `ready_delay` explains the tasks ready
        // behind it: they are its evidence once it counts as blocked, and
        // not a verdict of their own before.
        let long_poll = polling.is_some_and(|(_, start)| over(start, thresholds.ready_delay));
        for slot in lock_std(&self.slots).iter() {
            let Some(task) = slot.live() else { continue };
            if blocked.is_some_and(|(busy, _)| busy == task) {
                blocked_name = slot.name();
            }
            if let Some(at) = slot.ready.get() {
                if over(at, thresholds.ready_delay) {
                    ready.push((at, task, slot.name()));
                }
            } else if let Some(due) = slot.timer_due.get() {
                // Waiting on a timer: a known wake path, not a lost wake.
                // Past its deadline by more than `ready_delay`, the timer
                // should have fired and the task run: it is as good as
                // ready, and the executor is not getting to it.
                if over(due, thresholds.ready_delay) {
                    ready.push((due, task, slot.name()));
                }
            } else if let Some((name, since, false)) = *lock_std(&slot.line) {
                // Waiting in a channel's or semaphore's line: the other
                // side wakes it. Long waits there are the application's
                // capacity at work, not a lost wake.
                if over(since, thresholds.no_wake) {
                    match lines.iter_mut().find(|(on, ..)| *on == name) {
                        Some((_, waiting, oldest)) => {
                            *waiting += 1;
                            *oldest = (*oldest).min(since);
                        }
                        None => lines.push((name, 1, since)),
                    }
                }
            } else if let Some(at) = slot.waiting.get()
                && over(at, thresholds.no_wake)
                && blocked.is_none_or(|(busy, _)| busy != task)
            {
                // Waiting for a value names what it waits to receive from.
                let waits_for = lock_std(&slot.line).and_then(
                    |(name, _, receive)| {
                        if receive { name } else { None }
                    },
                );
                verdicts.push(Verdict::NoWake {
                    task,
                    name: slot.name(),
                    waiting: Duration::from_nanos(age(at)),
                    polls: slot.polls.load(Ordering::Relaxed),
                    waits_on: lock_std(&slot.io_wait).clone(),
                    waits_for,
                });
            }
        }
        ready.sort();
        // Looked at on every call, so that the window is the time since
        // the previous one.
        let look = self
            .cpu
            .as_ref()
            .and_then(|cpu| Some((cpu, cpu.look(now)?)));
        let starved = |task, name, delayed, limit| {
            let (cpu, look) = look?;
            cpu.fared(look, delayed)?
                .verdict(task, name, None, delayed, limit)
        };
        if let Some((task, start)) = blocked {
            let running_for = Duration::from_nanos(age(start));
            verdicts.push(
                starved(task, blocked_name, running_for, thresholds.blocked).unwrap_or(
                    Verdict::WorkerBlocked {
                        task,
                        name: blocked_name,
                        worker: None,
                        running_for,
                        ready_behind: ready.len(),
                        left: None,
                    },
                ),
            );
        } else if !long_poll && let Some(&(at, task, name)) = ready.first() {
            let ready_for = Duration::from_nanos(age(at));
            verdicts.push(
                starved(task, name, ready_for, thresholds.ready_delay).unwrap_or(
                    Verdict::ReadyButDelayed {
                        task,
                        name,
                        ready_for,
                        ready_tasks: ready.len(),
                    },
                ),
            );
        }
        for (on, waiting, since) in lines {
            verdicts.push(Verdict::Backpressure {
                on,
                waiting,
                longest: Duration::from_nanos(age(since)),
            });
        }
        if let Some(at) = self.last_full.get()
            && !over(at, thresholds.admission_window)
        {
            verdicts.push(Verdict::AdmissionFull {
                rejected_full: self.rejected_full.load(Ordering::Relaxed),
                since_last: Duration::from_nanos(age(at)),
                queued: ingress.0,
                capacity: ingress.1,
            });
        }
        verdicts
    }
}
