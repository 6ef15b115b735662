//! [`Lent`]: a value lent out of its [`Vault`] for as long as permits are
//! held: `dinah-std`'s read-write lock's writer, whose permits are a
//! semaphore's and whose value sits in a cell beside it.
//!
//! Taking the permits lends the value out of the cell into the guard;
//! dropping the guard puts the value back first and gives the permits back
//! second. So the value is in the cell exactly while the permits are free
//! or being handed on, and the guard owns it outright: no shared reference
//! to the cell is ever handed out, and no `unsafe` is needed for a guard
//! that is `Send` and lives across awaits. (The mutexes keep the value and
//! their one permit under one lock instead: [`Held`](super::Held).)
//!
//! What that costs: the value moves (a copy of `size_of::<T>()` bytes) into
//! each guard and back, and its address changes from one guard to the next.
#![forbid(unsafe_code)]

use core::fmt;
use core::ops::{Deref, DerefMut};

/// A cell that keeps a value while nobody borrows it.
pub trait Vault {
    /// What it keeps.
    type Value;
    /// Takes the value out, if it is in.
    fn take(&self) -> Option<Self::Value>;
    /// Puts the value back in.
    fn put(&self, value: Self::Value);
}

/// The value of the vault behind `H`, lent out while `P` (a permit) is
/// held; on drop the value goes back, then the permit.
pub struct Lent<H: Deref, P>
where
    H::Target: Vault,
{
    value: Option<<H::Target as Vault>::Value>,
    vault: H,
    permit: Option<P>,
}

impl<H: Deref, P> Lent<H, P>
where
    H::Target: Vault,
{
    /// Lends the value of `vault` to the holder of `permit`.
    ///
    /// # Panics
    ///
    /// If the value is not in the vault: whoever holds the permit finds it
    /// there, unless a guard was leaked, which keeps the permit too.
    pub fn take(vault: H, permit: P) -> Self {
        let Some(value) = vault.take() else {
            crate::fmt::fail!("a lent value was not in its vault while its permit was free");
        };
        Self {
            value: Some(value),
            vault,
            permit: Some(permit),
        }
    }

    /// The vault it came from.
    pub fn vault(&self) -> &H::Target {
        &self.vault
    }
}

impl<H: Deref, P> Deref for Lent<H, P>
where
    H::Target: Vault,
{
    type Target = <H::Target as Vault>::Value;

    fn deref(&self) -> &Self::Target {
        match &self.value {
            Some(value) => value,
            None => gone(),
        }
    }
}

impl<H: Deref, P> DerefMut for Lent<H, P>
where
    H::Target: Vault,
{
    fn deref_mut(&mut self) -> &mut Self::Target {
        match &mut self.value {
            Some(value) => value,
            None => gone(),
        }
    }
}

/// The value is only taken in `drop`, after which nothing reads it.
#[cold]
fn gone() -> ! {
    crate::fmt::fail!("a lent value read after it went back")
}

impl<H: Deref, P> Drop for Lent<H, P>
where
    H::Target: Vault,
{
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            self.vault.put(value);
        }
        // The value is back before the next holder can take the permit.
        drop(self.permit.take());
    }
}

impl<H: Deref, P> fmt::Debug for Lent<H, P>
where
    H::Target: Vault,
    <H::Target as Vault>::Value: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
