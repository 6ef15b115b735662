//! Spent shared cells kept per thread for the next channel of the same
//! type, so making a short-lived channel (a oneshot reply) again on a
//! thread reuses one allocation instead of making another.
//!
//! A cell is kept only when its holder is the last one (its strong count
//! is 1 and it has no weak reference, so no other end can see it or be
//! made) and its state has been put back to new. At most [`PER_TYPE`] cells of each of at most [`TYPES`]
//! types are kept per thread; past that a cell is freed as before. The
//! cells of a thread are freed when it exits.
//!
//! Measured against allocating each cell (`benches/sync_toolbox.rs`,
//! `oneshot_send_recv`, glibc's allocator): a oneshot made, sent and
//! received on one thread allocates nothing once the cache holds a cell of
//! its type, at 19-20 ns against 21-25 ns allocating (tokio's 25 ns); the
//! lookup by type costs about what the allocator's own free list does.
#![forbid(unsafe_code)]

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::sync::Arc;

/// At most this many spare cells of one type per thread.
pub(crate) const PER_TYPE: usize = 32;

/// At most this many types of cell per thread; a cell of another type is
/// freed.
pub(crate) const TYPES: usize = 16;

/// Per type: its id and a `Vec<Arc<C>>` of spare cells. The id could be
/// asked of each shelf (`Any::type_id`), but that is a call through the
/// shelf's vtable per shelf passed; kept beside it, finding the shelf is a
/// compare.
type Shelves = Vec<(TypeId, Box<dyn Any>)>;

thread_local! {
    static SPARE: RefCell<Shelves> = const { RefCell::new(Vec::new()) };
}

/// A spare cell of type `C` kept on this thread, if there is one. It is
/// the only reference to its cell, in the state [`keep`]'s caller left.
pub(crate) fn take<C: 'static>() -> Option<Arc<C>> {
    SPARE
        .try_with(|spare| {
            let mut shelves = spare.try_borrow_mut().ok()?;
            let id = TypeId::of::<C>();
            let (_, shelf) = shelves.iter_mut().find(|(kind, _)| *kind == id)?;
            shelf.downcast_mut::<Vec<Arc<C>>>()?.pop()
        })
        .ok()
        .flatten()
}

/// Keeps `cell` for a later [`take`] on this thread if it is the only
/// reference to its cell (no other end sees it again: none is made but from
/// another reference) and there is room; otherwise the reference is simply
/// dropped. The caller has seen, under the cell's own lock, that its state
/// is as new.
pub(crate) fn keep<C: 'static>(cell: Arc<C>) {
    if Arc::strong_count(&cell) != 1 || Arc::weak_count(&cell) != 0 {
        return;
    }
    // A cell with no room is handed back out of the borrow and dropped
    // after it.
    let refused = SPARE.try_with(|spare| {
        let Ok(mut shelves) = spare.try_borrow_mut() else {
            return Some(cell);
        };
        let id = TypeId::of::<C>();
        let found = shelves.iter().position(|(kind, _)| *kind == id);
        let index = match found {
            Some(index) => index,
            None if shelves.len() < TYPES => {
                shelves.push((id, Box::new(Vec::<Arc<C>>::with_capacity(PER_TYPE))));
                shelves.len() - 1
            }
            None => return Some(cell),
        };
        match shelves[index].1.downcast_mut::<Vec<Arc<C>>>() {
            Some(shelf) if shelf.len() < PER_TYPE => {
                shelf.push(cell);
                None
            }
            _ => Some(cell),
        }
    });
    drop(refused);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_cell_is_taken_back_by_its_type_only() {
        keep(Arc::new(7_u32));
        assert_eq!(take::<u64>(), None);
        let cell = take::<u32>().expect("kept");
        assert_eq!(*cell, 7);
        let weak = Arc::downgrade(&cell);
        keep(cell);
        assert_eq!(take::<u32>(), None, "a weak reference could make another");
        drop(weak);
        assert_eq!(take::<u32>(), None);
    }

    #[test]
    fn a_shared_cell_is_not_kept() {
        let cell = Arc::new(String::from("shared"));
        keep(Arc::clone(&cell));
        assert_eq!(take::<String>(), None);
        assert_eq!(Arc::strong_count(&cell), 1);
    }

    #[test]
    fn at_most_a_shelf_of_cells_is_kept() {
        for n in 0..PER_TYPE + 3 {
            keep(Arc::new(n as u16));
        }
        let mut taken = 0;
        while take::<u16>().is_some() {
            taken += 1;
        }
        assert_eq!(taken, PER_TYPE);
    }

    #[test]
    fn each_thread_keeps_its_own() {
        keep(Arc::new(1_i8));
        std::thread::spawn(|| assert_eq!(take::<i8>(), None))
            .join()
            .expect("the other thread");
        assert_eq!(take::<i8>().map(|cell| *cell), Some(1));
    }
}
