//! openraft's own storage suite (`openraft::testing::Suite`) against the
//! log store. The suite drives a log store and a state machine together;
//! the state machine here is a test fixture for the suite only, in memory,
//! recording what was applied. The real one, over the node's store, is
//! tested in its own file.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use openraft::storage::RaftStateMachine;
use openraft::testing::{StoreBuilder, Suite};
use openraft::{EntryPayload, RaftSnapshotBuilder, Snapshot, SnapshotMeta, StoredMembership};
use telha_jobs_cluster::{
    Applied, Entry, LogId, LogStore, PeerNode, SnapshotDir, StorageError, TypeConfig,
};

/// The last snapshot built or installed.
type Built = (SnapshotMeta<u64, PeerNode>, SnapshotDir);

/// Fixture: the applied id and membership, nothing else.
#[derive(Clone, Default)]
struct FixtureStateMachine {
    last_applied: Option<LogId>,
    membership: StoredMembership<u64, PeerNode>,
    /// Shared with the builders it hands out: the suite reads back, through
    /// the state machine, the snapshot a builder made.
    snapshot: Arc<Mutex<Option<Built>>>,
}

impl FixtureStateMachine {
    fn meta(&self) -> SnapshotMeta<u64, PeerNode> {
        let id = self.last_applied.map_or("none".into(), |l| l.to_string());
        SnapshotMeta {
            last_log_id: self.last_applied,
            last_membership: self.membership.clone(),
            snapshot_id: id,
        }
    }
}

impl RaftSnapshotBuilder<TypeConfig> for FixtureStateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let meta = self.meta();
        let dir = SnapshotDir::new(PathBuf::from(&meta.snapshot_id));
        *self.snapshot.lock().unwrap() = Some((meta.clone(), dir.clone()));
        Ok(Snapshot {
            meta,
            snapshot: Box::new(dir),
        })
    }
}

impl RaftStateMachine<TypeConfig> for FixtureStateMachine {
    type SnapshotBuilder = FixtureStateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId>, StoredMembership<u64, PeerNode>), StorageError> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>, StorageError>
    where
        I: IntoIterator<Item = Entry> + openraft::OptionalSend,
        I::IntoIter: openraft::OptionalSend,
    {
        let mut out = Vec::new();
        for e in entries {
            self.last_applied = Some(e.log_id);
            if let EntryPayload::Membership(m) = e.payload {
                self.membership = StoredMembership::new(Some(e.log_id), m);
            }
            out.push(Applied::Written);
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> FixtureStateMachine {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotDir>, StorageError> {
        Ok(Box::new(SnapshotDir::new(PathBuf::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, PeerNode>,
        snapshot: Box<SnapshotDir>,
    ) -> Result<(), StorageError> {
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        *self.snapshot.lock().unwrap() = Some((meta.clone(), *snapshot));
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        Ok(self
            .snapshot
            .lock()
            .unwrap()
            .clone()
            .map(|(meta, dir)| Snapshot {
                meta,
                snapshot: Box::new(dir),
            }))
    }
}

/// Each suite case gets a fresh log DB in its own temp directory (the
/// guard, kept alive for the case).
struct Builder;

impl StoreBuilder<TypeConfig, LogStore, FixtureStateMachine, tempfile::TempDir> for Builder {
    async fn build(
        &self,
    ) -> Result<(tempfile::TempDir, LogStore, FixtureStateMachine), StorageError> {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = LogStore::open(dir.path().join("raft")).expect("open log store");
        Ok((dir, log, FixtureStateMachine::default()))
    }
}

#[test]
fn log_store_passes_openraft_storage_suite() {
    Suite::test_all(Builder).unwrap();
}
