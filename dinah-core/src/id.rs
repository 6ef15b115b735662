//! Typed identifiers: [`CoreId`], [`TaskId`] and [`WorkerId`].
//!
//! Each is a distinct newtype over a non-zero `u64`. Zero is reserved as the
//! invalid value, and each type rejects it with an error of its own. The three
//! types never convert into one another, so an ID from one domain cannot be
//! passed where another domain's ID is expected:
//!
//! ```compile_fail,E0308
//! use dinah::{TaskId, WorkerId};
//!
//! fn assign(worker: WorkerId) -> u64 { worker.get() }
//!
//! let task = TaskId::new(7).unwrap();
//! assign(task); // error: expected `WorkerId`, found `TaskId`
//! ```
//!
//! # What an ID does not promise
//!
//! Constructing an ID allocates nothing and registers nothing. An ID does not
//! prove that the task, worker or core it names exists, is running, or is
//! unique: the component that hands out IDs is responsible for never giving
//! the same value to two live resources of one runtime. No process-wide or
//! cross-process uniqueness is implied.
#![forbid(unsafe_code)]

use core::fmt;
use core::num::NonZeroU64;

macro_rules! typed_id {
    (
        $(#[$type_doc:meta])*
        $name:ident,
        $(#[$error_doc:meta])*
        $error:ident,
        $domain:literal
    ) => {
        typed_id!(@type $(#[$type_doc])* $name, $(#[$error_doc])* $error, $domain);

        impl $name {
            /// The smallest valid identifier, `1`.
            pub const MIN: Self = Self(NonZeroU64::MIN);
            /// The largest valid identifier, `u64::MAX`.
            pub const MAX: Self = Self(NonZeroU64::MAX);

            #[doc = concat!("Wraps `value` as a ", $domain, " identifier.")]
            ///
            /// This validates the number only: it allocates nothing, registers
            /// nothing and does not check uniqueness.
            ///
            /// # Errors
            ///
            #[doc = concat!("Returns [`", stringify!($error), "`] when `value` is zero.")]
            pub const fn new(value: u64) -> Result<Self, $error> {
                match NonZeroU64::new(value) {
                    Some(value) => Ok(Self(value)),
                    None => Err($error),
                }
            }
        }

        impl fmt::Display for $error {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!($domain, " ID must be non-zero"))
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.0).finish()
            }
        }

        impl fmt::Display for $name {
            /// Writes the bare number, for example `42`.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
    (
        @type
        $(#[$type_doc:meta])*
        $name:ident,
        $(#[$error_doc:meta])*
        $error:ident,
        $domain:literal
    ) => {
        $(#[$type_doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(NonZeroU64);

        impl $name {
            /// Returns the numeric value, which is never zero.
            #[must_use]
            pub const fn get(self) -> u64 {
                self.0.get()
            }
        }

        impl TryFrom<u64> for $name {
            type Error = $error;

            fn try_from(value: u64) -> Result<Self, Self::Error> {
                Self::new(value)
            }
        }

        impl From<$name> for u64 {
            fn from(id: $name) -> u64 {
                id.get()
            }
        }

        impl From<$name> for NonZeroU64 {
            fn from(id: $name) -> NonZeroU64 {
                id.0
            }
        }

        impl From<NonZeroU64> for $name {
            /// The identifier whose [`get`](Self::get) is `value`: the
            /// inverse of the conversion into `NonZeroU64`.
            fn from(value: NonZeroU64) -> Self {
                Self(value)
            }
        }

        $(#[$error_doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
        pub struct $error;

        impl core::error::Error for $error {}
    };
}

typed_id! {
    /// Identifies one core-level resource of a runtime.
    ///
    /// A non-zero `u64`. It is a different type from [`TaskId`] and
    /// [`WorkerId`] and never stands for either.
    CoreId,
    /// [`CoreId::new`] was given zero, the reserved invalid value.
    CoreIdError,
    "core"
}

typed_id! {
    @type
    /// Identifies one logical task.
    ///
    /// A non-zero `u64` that stays the same for the task's whole life. It
    /// names a task; it does not hold the task's state, prove the task was
    /// accepted, or grant access to its result.
    ///
    /// # Two kinds of number
    ///
    /// The hosted executors and pools count their ids from 1 in submission
    /// order; such an id prints as its number (`42`). The core
    /// [`AsyncExecutor`](crate::AsyncExecutor) names a task by the slot it
    /// occupies and the generation of that slot (how many tasks the slot held
    /// before it), packed into the number with its top bit set; such an id
    /// prints as both parts (`slot 3, generation 1`), and
    /// [`slot`](Self::slot) and [`generation`](Self::generation) read them
    /// back. [`get`](Self::get) is always the raw number.
    ///
    /// The two kinds never meet: [`new`](Self::new) takes plain numbers
    /// only, from 1 to 2<sup>63</sup> − 1 ([`MAX`](Self::MAX)), and refuses
    /// the upper half, which names slots. So an id a user makes with `new`
    /// always prints as its number and has no [`slot`](Self::slot), and
    /// `Display`, `Ord` and `Hash` all follow [`get`](Self::get) for every
    /// id. An id read back from its raw number (a trace, a log) goes
    /// through [`from_raw`](Self::from_raw) or `From<NonZeroU64>`, which
    /// take any non-zero number and give back the id that had it.
    ///
    /// A slot's generations have 47 bits: its ids repeat only after
    /// 2<sup>47</sup> tasks in that one slot, over 4,000 years at one task
    /// a millisecond.
    TaskId,
    /// [`TaskId::new`] was given zero, the reserved invalid value, or a
    /// number of 2<sup>63</sup> or more, which names a core executor's slot
    /// (see [`TaskId::from_raw`] to read such an id back).
    TaskIdError,
    "task"
}

/// The top bit of a [`TaskId`] that the core executor packed from a slot and
/// a generation.
const SLOT_TAG: u64 = 1 << 63;
/// The bits of a packed id below the tag that hold the generation.
const GENERATION_BITS: u32 = 47;
const GENERATION_MASK: u64 = (1 << GENERATION_BITS) - 1;

impl TaskId {
    /// The smallest plain identifier, `1`.
    pub const MIN: Self = Self(NonZeroU64::MIN);
    /// The largest plain identifier [`new`](Self::new) accepts,
    /// 2<sup>63</sup> − 1 (the numbers above it name core executor slots).
    pub const MAX: Self = match NonZeroU64::new(SLOT_TAG - 1) {
        Some(max) => Self(max),
        None => Self(NonZeroU64::MIN),
    };

    /// Wraps `value` as a plain task identifier (the kind the hosted
    /// executors and pools hand out; it prints as its number).
    ///
    /// This validates the number only: it allocates nothing, registers
    /// nothing and does not check uniqueness.
    ///
    /// # Errors
    ///
    /// Returns [`TaskIdError`] when `value` is zero or at least
    /// 2<sup>63</sup> (those name core executor slots).
    pub const fn new(value: u64) -> Result<Self, TaskIdError> {
        if value & SLOT_TAG != 0 {
            return Err(TaskIdError);
        }
        match NonZeroU64::new(value) {
            Some(value) => Ok(Self(value)),
            None => Err(TaskIdError),
        }
    }

    /// The id whose [`get`](Self::get) is `value`, of either kind: the
    /// inverse of `get`, for ids read back from a trace or a log. A value
    /// of 2<sup>63</sup> or more is a core executor's id and prints as its
    /// slot and generation.
    ///
    /// # Errors
    ///
    /// Returns [`TaskIdError`] when `value` is zero.
    pub const fn from_raw(value: u64) -> Result<Self, TaskIdError> {
        match NonZeroU64::new(value) {
            Some(value) => Ok(Self(value)),
            None => Err(TaskIdError),
        }
    }

    /// The id of the task of generation `generation` (its low 47 bits) in
    /// slot `slot` of a core executor.
    pub(crate) const fn from_slot(slot: u16, generation: u64) -> Self {
        let raw = SLOT_TAG | ((generation & GENERATION_MASK) << 16) | slot as u64;
        match NonZeroU64::new(raw) {
            Some(raw) => Self(raw),
            None => Self(NonZeroU64::MAX),
        }
    }

    /// The slot of the core executor this id names a task of, or `None` for
    /// an id that was not made by a core executor (a hosted executor's or a
    /// pool's, or one made with [`new`](Self::new), which refuses the
    /// numbers that name slots).
    #[must_use]
    pub const fn slot(self) -> Option<u16> {
        if self.0.get() & SLOT_TAG == 0 {
            None
        } else {
            Some(self.0.get() as u16)
        }
    }

    /// The generation of the slot this id names (how many tasks the slot held
    /// before this one, modulo 2<sup>47</sup>), or `None` as for
    /// [`slot`](Self::slot).
    #[must_use]
    pub const fn generation(self) -> Option<u64> {
        if self.0.get() & SLOT_TAG == 0 {
            None
        } else {
            Some((self.0.get() >> 16) & GENERATION_MASK)
        }
    }
}

impl fmt::Debug for TaskId {
    /// `TaskId(42)`, or `TaskId(slot 3, generation 1)` for a core
    /// executor's id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.slot(), self.generation()) {
            (Some(slot), Some(generation)) => {
                write!(f, "TaskId(slot {slot}, generation {generation})")
            }
            _ => f.debug_tuple("TaskId").field(&self.0).finish(),
        }
    }
}

impl fmt::Display for TaskIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "task ID must be non-zero and below 2^63 (the numbers above name core executor slots)",
        )
    }
}

impl fmt::Display for TaskId {
    /// The bare number, for example `42`, or `slot 3, generation 1` for a
    /// core executor's id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.slot(), self.generation()) {
            (Some(slot), Some(generation)) => write!(f, "slot {slot}, generation {generation}"),
            _ => fmt::Display::fmt(&self.0, f),
        }
    }
}

typed_id! {
    /// Identifies one worker, an execution resource.
    ///
    /// A non-zero `u64`, stable for the worker's lifetime. It says nothing
    /// about the worker's liveness, thread or current task.
    WorkerId,
    /// [`WorkerId::new`] was given zero, the reserved invalid value.
    WorkerIdError,
    "worker"
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;
    use std::format;
    use std::hash::{Hash, Hasher};
    use std::string::ToString;

    fn hash_of<T: Hash>(value: &T) -> u64 {
        let mut hasher = DefaultHasher::new();
        value.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn zero_is_rejected_with_each_domains_error() {
        assert_eq!(CoreId::new(0), Err(CoreIdError));
        assert_eq!(TaskId::new(0), Err(TaskIdError));
        assert_eq!(WorkerId::new(0), Err(WorkerIdError));
        assert_eq!(TaskId::try_from(0), Err(TaskIdError));
    }

    #[test]
    fn boundary_values_round_trip() {
        for value in [1, 2, u64::MAX - 1, u64::MAX] {
            assert_eq!(CoreId::new(value).unwrap().get(), value);
            assert_eq!(TaskId::from_raw(value).unwrap().get(), value);
            assert_eq!(WorkerId::new(value).unwrap().get(), value);
        }
        for value in [1, 2, (1 << 63) - 2, (1 << 63) - 1] {
            assert_eq!(TaskId::new(value).unwrap().get(), value);
            assert_eq!(u64::from(TaskId::try_from(value).unwrap()), value);
        }
        assert_eq!(TaskId::MIN.get(), 1);
        assert_eq!(TaskId::MAX.get(), (1 << 63) - 1);
        assert_eq!(WorkerId::MAX.get(), u64::MAX);
    }

    #[test]
    fn construction_is_usable_in_const_context() {
        const ID: Result<TaskId, TaskIdError> = TaskId::new(9);
        assert_eq!(ID.unwrap().get(), 9);
    }

    #[test]
    fn display_is_the_bare_number_and_errors_name_their_domain() {
        assert_eq!(TaskId::new(42).unwrap().to_string(), "42");
        assert_eq!(format!("{:>4}", WorkerId::new(7).unwrap()), "   7");
        assert_eq!(CoreIdError.to_string(), "core ID must be non-zero");
        assert_eq!(
            TaskIdError.to_string(),
            "task ID must be non-zero and below 2^63 (the numbers above name core executor slots)"
        );
        assert_eq!(WorkerIdError.to_string(), "worker ID must be non-zero");
    }

    #[test]
    fn a_core_executor_id_prints_its_slot_and_generation_and_keeps_its_raw_number() {
        let id = TaskId::from_slot(3, 1);
        assert_eq!((id.slot(), id.generation()), (Some(3), Some(1)));
        assert_eq!(id.get(), (1 << 63) | (1 << 16) | 3);
        assert_eq!(id.to_string(), "slot 3, generation 1");
        assert_eq!(format!("{id:?}"), "TaskId(slot 3, generation 1)");
        let plain = TaskId::new(4_294_967_299).unwrap();
        assert_eq!((plain.slot(), plain.generation()), (None, None));
        assert_eq!(format!("{plain:?}"), "TaskId(4294967299)");
        // Generations keep 47 bits, then wrap.
        let last = TaskId::from_slot(0, (1 << 47) - 1);
        assert_eq!(last.generation(), Some((1 << 47) - 1));
        assert_eq!(TaskId::from_slot(0, 1 << 47).generation(), Some(0));
        assert_eq!(format!("{:?}", WorkerId::new(7).unwrap()), "WorkerId(7)");
    }

    #[test]
    fn an_id_made_with_new_never_reads_as_a_core_executors() {
        for value in [1 << 63, (1 << 63) | 1, u64::MAX - 1, u64::MAX] {
            assert_eq!(TaskId::new(value), Err(TaskIdError), "{value}");
            assert_eq!(TaskId::try_from(value), Err(TaskIdError), "{value}");
        }
        // Every id `new` makes has no slot and prints as its number, so
        // Display, Ord and Hash agree with the number.
        for value in [1, 42, u64::from(u32::MAX) + 3, (1 << 63) - 1] {
            let id = TaskId::new(value).unwrap();
            assert_eq!((id.slot(), id.generation()), (None, None), "{value}");
            assert_eq!(id.to_string(), value.to_string());
        }
        let (low, high) = (TaskId::new(5).unwrap(), TaskId::MAX);
        assert!(low < high);
        assert_ne!(hash_of(&low), hash_of(&high));
        // A raw core id read back is the id the executor made.
        let packed = TaskId::from_slot(7, 3);
        assert_eq!(TaskId::from_raw(packed.get()), Ok(packed));
        assert_eq!(TaskId::from(NonZeroU64::from(packed)), packed);
        assert_eq!(TaskId::from_raw(0), Err(TaskIdError));
    }

    #[test]
    fn equality_order_and_hash_follow_the_number() {
        let a = TaskId::new(3).unwrap();
        let b = TaskId::new(3).unwrap();
        let c = TaskId::new(4).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a < c && c > b);
        assert_eq!(hash_of(&a), hash_of(&b));
        let mut sorted = [c, a, TaskId::MIN];
        sorted.sort();
        assert_eq!(sorted, [TaskId::MIN, a, c]);
    }

    #[test]
    fn errors_implement_core_error() {
        fn is_error<E: core::error::Error>(_: &E) {}
        is_error(&CoreIdError);
        is_error(&TaskIdError);
        is_error(&WorkerIdError);
    }
}
