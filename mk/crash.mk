# Issue #7: the kill -9 crash harness (tests/crash, crate telha-crash) and
# the decoder property tests (core/tests/decoders.rs).
#
# `make test` runs 10 kills per sync mode (about 20 s), then kills a
# schedule's owner 20 times (about a minute; issue 17: one job per slot),
# then an owner completing parents with follow-up jobs 20 times (issue 20),
# then an owner mixing unique-window enqueues with promote / reschedule /
# set_priority and settles 20 times (issue 44, about 20 s), then an owner
# enqueueing and moving tagged jobs 20 times (issue 42: every acknowledged
# job listed once under each of its tags), then an owner leasing keyed jobs
# under key caps and ordered keys 20 times (issue 43: caps by the ack log's
# lease intervals, FIFO per ordered key, the key index);
# `make bench-crash` runs 100 per mode and 60 schedule kills per mode (the
# summary in docs/operators.md, "Crash safety, measured"). Each run prints its seed; rerun one with
# `make bench-crash CRASH_ARGS="--seed N"`.

CRASH_BIN := $(CARGO_TARGET_DIR)/release/telha-crash
CRASH_ARGS ?=
CRASH_SCHEDULE_ARGS ?=

TEST_TARGETS += test-crash test-decoders

.PHONY: crash-build test-crash bench-crash test-decoders

crash-build:
	$(CARGO) build $(PROFILE) -p telha-crash

## The harness's own unit tests, then 10 SIGKILLs per sync mode with the
## invariant checks after each; ends with "N passed, N failed".
test-crash: crash-build
	$(CARGO) test $(PROFILE) -p telha-crash
	$(CRASH_BIN) run --kills 10 --sync both $(CRASH_ARGS)
	$(CRASH_BIN) schedules --kills 20 $(CRASH_SCHEDULE_ARGS)
	$(CRASH_BIN) followups --kills 20
	$(CRASH_BIN) fanin --kills 20
	$(CRASH_BIN) steer --kills 20
	$(CRASH_BIN) tags --kills 20
	$(CRASH_BIN) keys --kills 20

## 100 SIGKILLs per sync mode (several minutes).
bench-crash: crash-build
	$(CRASH_BIN) run --kills 100 --sync both $(CRASH_ARGS)
	$(CRASH_BIN) schedules --kills 60 --sync both $(CRASH_SCHEDULE_ARGS)
	$(CRASH_BIN) followups --kills 100 --sync both
	$(CRASH_BIN) fanin --kills 100 --sync both
	$(CRASH_BIN) steer --kills 100 --sync both
	$(CRASH_BIN) tags --kills 100 --sync both
	$(CRASH_BIN) keys --kills 100 --sync both

## Random and mutated bytes into the record, key and payload decoders
## (proptest), and the committed fuzz inputs (fuzz/regressions/) through the
## cargo-fuzz targets' own checks; the targets themselves run in `make fuzz`
## (mk/fuzz.mk), never here.
test-decoders:
	$(CARGO) test $(PROFILE) -p telha-jobs --test decoders
