//! [`Gate`]: where the incident drills hold a thread (a fault) until the
//! drill lets it go, counting who arrived so the drill knows the fault is
//! in place.
// Each user takes the parts it needs.
#![allow(dead_code)]

use std::sync::{Condvar, Mutex};

/// A gate threads can be held at: closed, `hold` blocks until `open`.
#[derive(Default)]
pub(crate) struct Gate {
    state: Mutex<(bool, usize)>,
    changed: Condvar,
}

impl Gate {
    pub(crate) fn close(&self) {
        self.state.lock().unwrap().0 = true;
    }

    pub(crate) fn open(&self) {
        self.state.lock().unwrap().0 = false;
        self.changed.notify_all();
    }

    /// Blocks while closed; counts the threads that arrived.
    pub(crate) fn hold(&self) {
        let mut state = self.state.lock().unwrap();
        state.1 += 1;
        self.changed.notify_all();
        while state.0 {
            state = self.changed.wait(state).unwrap();
        }
    }

    /// How many threads have arrived in all.
    pub(crate) fn arrivals(&self) -> usize {
        self.state.lock().unwrap().1
    }

    /// Waits until `count` threads have arrived in all.
    pub(crate) fn wait_arrivals(&self, count: usize) {
        let mut state = self.state.lock().unwrap();
        while state.1 < count {
            state = self.changed.wait(state).unwrap();
        }
    }
}
