# Issue 16: what job control costs (core/benches/control.rs), beside raw
# RocksDB batches of the engine's shape measured in the same run: lease
# cost with a paused 1,000,000-job kind and with 100,000 unexpired expiries
# (each ≤ 1.1× its baseline is the target), cancel_many of 100,000 jobs/s.
# `make bench` runs it; `make bench-control CONTROL_ARGS=--quick` is a smoke run.

CONTROL_ARGS ?=

.PHONY: bench-control

BENCH_TARGETS += bench-control

bench-control:
	$(CARGO) bench -p telha-jobs --bench control -- $(CONTROL_ARGS)
