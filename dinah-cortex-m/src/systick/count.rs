//! [`Count`]: the clock's bookkeeping over SysTick's periods, apart from
//! the hardware, so that the host tests it.

/// SysTick's longest reload (its counter is 24 bits wide).
pub(crate) const MAX_RELOAD: u32 = 0x00FF_FFFF;

/// How SysTick's periods are chosen.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// Not started: readings stay at 0, and the alarm arms nothing.
    Stopped,
    /// Each period runs to the next alarm, or is the longest there is.
    Tickless,
    /// Every period has this reload; the alarm sets nothing.
    Periodic(u32),
}

/// The clock's state: the ticks of the periods that ended, and what the
/// current and the next period are.
///
/// SysTick counts down from a period's reload value to 0, and then loads
/// the reload register's value for the next period; the wrap makes its
/// exception pending. A period of reload `r` lasts `r + 1` ticks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Count {
    /// Ticks counted before the current period began.
    base: u64,
    /// The current period's reload value.
    reload: u32,
    /// The reload register: the next period's reload.
    next: u32,
    /// The latest reading, so that readings never go back.
    last: u64,
    /// SysTick exceptions handled.
    interrupts: u32,
    mode: Mode,
}

impl Count {
    /// Not started: a period of one tick that never began, so that
    /// readings stay at 0 (with no test of the mode on the reading's path)
    /// until SysTick starts.
    pub(crate) const fn new() -> Self {
        Self {
            base: 0,
            reload: 0,
            next: 0,
            last: 0,
            interrupts: 0,
            mode: Mode::Stopped,
        }
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    pub(crate) fn interrupts(&self) -> u32 {
        self.interrupts
    }

    /// The reload a period has when no alarm shortened it.
    fn resting_reload(&self) -> u32 {
        match self.mode {
            Mode::Periodic(reload) => reload,
            Mode::Stopped | Mode::Tickless => MAX_RELOAD,
        }
    }

    /// SysTick starts counting down from `reload` in `mode`, at the
    /// current reading.
    pub(crate) fn started(&mut self, mode: Mode) -> u32 {
        self.mode = mode;
        let reload = self.resting_reload();
        self.base = self.last;
        self.reload = reload;
        self.next = reload;
        reload
    }

    /// The exception of a wrap ran: the period ended, and the next began
    /// with the reload register's value. Returns the reload to write to the
    /// register for the period after it, if it must change (after an
    /// alarm's short period, the resting one again, so that a core busy
    /// past its alarm is not interrupted at the alarm's rate).
    pub(crate) fn wrapped(&mut self) -> Option<u32> {
        self.interrupts = self.interrupts.wrapping_add(1);
        self.base += u64::from(self.reload) + 1;
        self.reload = self.next;
        let resting = self.resting_reload();
        self.next = resting;
        (self.reload != resting).then_some(resting)
    }

    /// The clock's reading for SysTick's counter `value`, where `wrapped`
    /// says the wrap's exception is pending (it waits for the critical
    /// section the reading is made in), and `value` was read after that
    /// was seen. Never less than an earlier reading.
    pub(crate) fn reading(&mut self, value: u32, wrapped: bool) -> u64 {
        let ticks = if wrapped {
            // The period ended and its exception has not run: count the
            // period here. The next one began with the register's value
            // (a 0 is the instant of the wrap, before the reload).
            let into_next = if value == 0 {
                0
            } else {
                self.next.saturating_sub(value)
            };
            self.base + u64::from(self.reload) + 1 + u64::from(into_next)
        } else if value == 0 {
            // Just restarted, not yet reloaded.
            self.base
        } else {
            self.base + u64::from(self.reload.saturating_sub(value))
        };
        let ticks = ticks.max(self.last);
        self.last = ticks;
        ticks
    }

    /// A new period of `ticks` (clamped to `shortest ..= 2^24`) starts at
    /// reading `now`, as the alarm restarts SysTick: a pending wrap was
    /// counted by `now` already. Returns the reload to write.
    pub(crate) fn restarted(&mut self, now: u64, ticks: u64, shortest: u64) -> u32 {
        let longest = u64::from(MAX_RELOAD) + 1;
        let reload = (ticks.clamp(shortest.clamp(1, longest), longest) - 1) as u32;
        self.base = now;
        self.reload = reload;
        self.next = reload;
        reload
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_start_the_clock_stands_at_zero() {
        // Whatever SysTick's counter holds before it is set up.
        let mut count = Count::new();
        assert_eq!(count.reading(1234, false), 0);
        assert_eq!(count.reading(0, false), 0);
        assert_eq!(count.mode(), Mode::Stopped);
    }

    #[test]
    fn a_tickless_clock_adds_up_whole_periods_and_the_current_one() {
        let mut count = Count::new();
        assert_eq!(count.started(Mode::Tickless), MAX_RELOAD);
        // Counting down from the reload: the ticks so far.
        assert_eq!(count.reading(MAX_RELOAD, false), 0);
        assert_eq!(count.reading(MAX_RELOAD - 10, false), 10);
        // The wrap, seen pending before its exception ran.
        let period = u64::from(MAX_RELOAD) + 1;
        assert_eq!(count.reading(0, true), period);
        assert_eq!(count.reading(MAX_RELOAD - 5, true), period + 5);
        // The exception ran: the same instant reads the same.
        assert_eq!(count.wrapped(), None, "the resting period stays");
        assert_eq!(count.reading(MAX_RELOAD - 5, false), period + 5);
    }

    #[test]
    fn an_alarm_period_is_followed_by_the_resting_one() {
        let mut count = Count::new();
        count.started(Mode::Tickless);
        let now = count.reading(MAX_RELOAD - 100, false);
        assert_eq!(now, 100);
        // An alarm 1,000 ticks away.
        assert_eq!(count.restarted(now, 1_000, 64), 999);
        assert_eq!(count.reading(0, false), 100, "restarted, not yet reloaded");
        assert_eq!(count.reading(999, false), 100);
        assert_eq!(count.reading(499, false), 600);
        assert_eq!(count.reading(0, true), 1_100, "the alarm's instant");
        // Its exception asks for the resting reload again.
        assert_eq!(count.wrapped(), Some(MAX_RELOAD));
        assert_eq!(count.reading(998, false), 1_101);
    }

    #[test]
    fn an_alarm_period_is_clamped_to_what_systick_can_count() {
        let mut count = Count::new();
        count.started(Mode::Tickless);
        assert_eq!(count.restarted(0, 3, 64), 63, "the shortest period");
        assert_eq!(count.restarted(0, u64::MAX, 64), MAX_RELOAD);
        assert_eq!(count.restarted(0, 0, 0), 0, "one tick at least");
    }

    #[test]
    fn a_periodic_clock_keeps_its_period() {
        let mut count = Count::new();
        assert_eq!(count.started(Mode::Periodic(999)), 999);
        for round in 1..=3u64 {
            assert_eq!(count.reading(0, true), round * 1_000);
            assert_eq!(count.wrapped(), None, "the register keeps the period");
        }
        assert_eq!(count.reading(989, false), 3_010);
        assert_eq!(count.interrupts(), 3);
    }

    #[test]
    fn readings_never_go_back() {
        let mut count = Count::new();
        count.started(Mode::Periodic(999));
        assert_eq!(count.reading(0, true), 1_000);
        // A wrap seen pending, then a reading that misses it: the earlier
        // reading stands.
        assert_eq!(count.reading(999, false), 1_000);
    }
}
