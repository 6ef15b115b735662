//! What the crate does with caught panics: read their text, and drop values
//! whose destructors might panic without letting that panic escape.

use std::any::Any;
use std::mem;
use std::panic::{self, AssertUnwindSafe};

/// A caught panic's payload.
pub(crate) type Payload = Box<dyn Any + Send + 'static>;

/// The text of a caught panic: its `&str` or `String` payload, or
/// `"<non-string panic payload>"`.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "<non-string panic payload>".to_owned()
    }
}

/// Drops `value`, catching a panic from its destructor.
///
/// The caught payload is dropped the same way; only a payload whose own
/// destructor panics too is leaked, since nothing could drop it safely.
pub(crate) fn drop_quietly<T>(value: T) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(move || drop(value)))
        && let Err(inner) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)))
    {
        mem::forget(inner);
    }
}
