# The replicated store (issue 38): cluster/, the only crate that names
# openraft. A default member, so test-core's `cargo test --release` runs its
# tests (openraft's storage suite against the log store, group commit,
# corruption, nodes, faults, contention).
#
# `make bench-cluster` (part of `make bench`) prints, each measured in the
# same run, rounds interleaved because fsync latency drifts:
# - log_append: the log's group commit beside raw RocksDB sync puts;
# - cluster_gates: issue 38's gates, printed as ratios with "met"/"NOT
#   met", never asserted: the batched lifecycle (enqueue_many(100) +
#   lease_many(100) + complete_many) at 1 and 16 clients through a 3-node
#   in-process cluster (real fsynced logs) beside one store with
#   sync_writes, target >= 0.5x, with Raft entries per write call; and
#   failover (leader crashed -> first acknowledged write on the new leader)
#   over 20 rounds, p50 and max with the timing settings, target < 2 s;
# - cluster_floor: the 1-client row taken apart: fsync latency of the disk
#   (1 and 3 files at once), each lifecycle call's latency on the single
#   store and through the cluster with its stages (telha_jobs_cluster::probe:
#   proposer, log appends and fsyncs, the follower's ack, the leader's apply,
#   the answers; p50/p90), and bare openraft with a no-op state machine and
#   the same log store (the consensus floor).
# TELHA_BENCH_DIR picks the disk.

.PHONY: bench-cluster bench-cluster-quick test-cluster-failpoints

BENCH_TARGETS += bench-cluster

bench-cluster: deps
	$(CARGO) bench -p telha-jobs-cluster --bench log_append
	$(CARGO) bench -p telha-jobs-cluster --bench cluster_gates
	$(CARGO) bench -p telha-jobs-cluster --bench cluster_floor

bench-cluster-quick: deps
	$(CARGO) bench -p telha-jobs-cluster --bench log_append -- --quick
	$(CARGO) bench -p telha-jobs-cluster --bench cluster_gates -- --quick
	$(CARGO) bench -p telha-jobs-cluster --bench cluster_floor -- --quick

# Failpoints (cargo feature `failpoints` of the cluster crate only: core and
# RocksDB build as without it, `make check-vendor` checks that graph): one
# crash at a seeded failpoint under load in `make test`, and the fencing
# token's two forced paths (tests/fencing.rs: a fenced engine's entry held
# past its fence check until the next engine opened; a leader restarted
# into its own vote with entries not yet applied), and a follower crashed
# inside a snapshot install, before and after the swap
# (tests/install_crash.rs); one test per point in
# test-cluster-long. Only the cluster crate compiles a second
# time.
TEST_TARGETS += test-cluster-failpoints

test-cluster-failpoints: deps
	$(CARGO) test $(PROFILE) -p telha-jobs-cluster --features failpoints --test failpoints --test fencing --test install_crash -- --nocapture

# The long cluster runs (issues 38 and 39), kept out of `make test`: the
# contention test with 100,000 jobs across two leader changes, three crashes
# at each failpoint (before and after the log flush, before and after the
# apply) under load, two minutes of snapshot triggers and log purges
# hammered under writes (tests/snapshots.rs), and ten minutes of load with
# each node's log and snapshot bytes sampled against a stated bound
# (tests/disk_bound.rs; TELHA_DISK_BOUND_SECS sets the length). One test at a time: each is a 3-node cluster on this machine's
# cores. Failover time is measured by bench-cluster, not asserted in tests.
# TELHA_CLUSTER_SEED=<n> replays a run's network faults and failpoint picks.
.PHONY: test-cluster-long

test-cluster-long: deps
	$(CARGO) test $(PROFILE) -p telha-jobs-cluster --tests -- --ignored --test-threads=1 --nocapture
	$(CARGO) test $(PROFILE) -p telha-jobs-cluster --features failpoints --test failpoints -- --ignored --test-threads=1 --nocapture
