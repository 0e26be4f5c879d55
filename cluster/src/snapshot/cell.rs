//! The node's store, swappable: a snapshot install closes the store and
//! opens the received one in its place, while the watcher, the snapshot
//! builder, the purge guard and callers reach it through clones of one
//! [`StoreCell`].

use std::sync::{Arc, RwLock};

use telha_jobs::replica::ReplicaStore;

/// One node's store, shared. Take a handle ([`StoreCell::get`]) for one
/// use and let it go: an install waits for every handle of the old store
/// to drop before it closes it.
#[derive(Clone)]
pub struct StoreCell {
    inner: Arc<RwLock<Option<ReplicaStore>>>,
}

impl StoreCell {
    pub fn new(store: ReplicaStore) -> StoreCell {
        StoreCell {
            inner: Arc::new(RwLock::new(Some(store))),
        }
    }

    /// A handle to the store; waits while an install swaps it. `None`
    /// only after an install failed and could not open a store again
    /// (the state machine then answers every call with that error).
    pub fn get(&self) -> Option<ReplicaStore> {
        self.inner.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Run `f` with the store taken out (readers wait), putting back what
    /// it returns.
    pub(crate) fn swap<R>(
        &self,
        f: impl FnOnce(Option<ReplicaStore>) -> (Option<ReplicaStore>, R),
    ) -> R {
        let mut slot = self.inner.write().unwrap_or_else(|p| p.into_inner());
        let (back, r) = f(slot.take());
        *slot = back;
        r
    }
}
