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
