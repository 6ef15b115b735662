//! How the crate reports a broken invariant: through `defmt` on bare metal
//! when the `defmt` feature is on, through `core::panic!` otherwise.
//!
//! With `defmt`, the message is interned in the ELF's non-loaded `.defmt`
//! section and the panic carries no message or location of its own: a
//! firmware keeps neither the text nor the source path in flash. On a host
//! the feature only implements `defmt::Format`, and needs no defmt logger
//! at link time.
#![forbid(unsafe_code)]

/// Panics with the fixed message `$message` (see the module docs).
macro_rules! fail {
    ($message:literal) => {{
        #[cfg(all(feature = "defmt", target_os = "none"))]
        ::defmt::panic!($message);
        #[cfg(not(all(feature = "defmt", target_os = "none")))]
        ::core::panic!($message);
    }};
}

pub(crate) use fail;
