# Issue 20: what flow control costs (core/benches/flow.rs), beside raw
# RocksDB batches measured in the same run: lease cost with 1,000 scopes at
# their cap and one free scope (target ≤ 1.2× a store without limits), and
# lifecycle throughput with a kind cap and a rate configured but not
# reached (target ≥ 0.9× without), and lease cost beside 10,000 job keys
# at their key:* cap (issue 43; target ≤ 1.2× no keys). `make bench` runs it;
# `make bench-flow FLOW_ARGS=--quick` is a smoke run.

FLOW_ARGS ?=

.PHONY: bench-flow

BENCH_TARGETS += bench-flow

bench-flow:
	$(CARGO) bench -p telha-jobs --bench flow -- $(FLOW_ARGS)
