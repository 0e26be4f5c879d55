# The replicated store (issue 38): cluster/, the only crate that names
# openraft. A default member, so test-core's `cargo test --release` runs its
# tests (openraft's storage suite against the log store, group commit,
# corruption). `make bench` runs bench-cluster: the log's group commit
# beside raw RocksDB sync puts, in the same run.

.PHONY: bench-cluster bench-cluster-quick

BENCH_TARGETS += bench-cluster

bench-cluster: deps
	$(CARGO) bench -p telha-jobs-cluster --bench log_append

bench-cluster-quick: deps
	$(CARGO) bench -p telha-jobs-cluster --bench log_append -- --quick

# The long cluster runs (issue 38), kept out of `make test`: the contention
# test with 100,000 jobs across two leader changes and 20 failover rounds
# (leader crashed -> first acknowledged write, p50 and max printed). One
# test at a time: each is a 3-node cluster on this machine's cores.
# TELHA_CLUSTER_SEED=<n> replays a run's network faults.
.PHONY: test-cluster-long

test-cluster-long: deps
	$(CARGO) test $(PROFILE) -p telha-jobs-cluster --tests -- --ignored --test-threads=1 --nocapture
