//! How the crate reports a broken invariant: through `defmt` when the
//! `defmt` feature is on, through `core::panic!` otherwise.
//!
//! With `defmt`, the message is interned in the ELF's non-loaded `.defmt`
//! section and the panic carries no message or location of its own: a
//! firmware keeps neither the text nor the source path in flash.
#![forbid(unsafe_code)]

/// Panics with the fixed message `$message` (see the module docs).
macro_rules! fail {
    ($message:literal) => {{
        #[cfg(feature = "defmt")]
        ::defmt::panic!($message);
        #[cfg(not(feature = "defmt"))]
        ::core::panic!($message);
    }};
}

pub(crate) use fail;
