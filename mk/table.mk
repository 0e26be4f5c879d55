# Issue #7: `make bench` ends with ONE table (README "Performance"): the
# lifecycle and batch figures of Rust, C (.so and .a), Python and Node, each
# beside raw RocksDB measured in the same run (scripts/bench_table.py).
#
# This fragment sorts last among mk/*.mk, and bench-table is the last of
# BENCH_TARGETS; it also depends on every other bench target (second
# expansion: the list as it stands once every fragment is read), so the
# table is what `make bench` prints last. `make bench-table-only` prints the
# table alone.

TABLE_N ?= 20000
TABLE_BATCH ?= 100
TABLE_ROUNDS ?= 5

.PHONY: bench-table bench-table-only
.SECONDEXPANSION:

BENCH_TARGETS += bench-table

bench-table: bench-core $$(filter-out bench-table,$$(BENCH_TARGETS))
	@$(MAKE) -s --no-print-directory bench-table-only

bench-table-only: $(C_OUT)/bench/bench_lifecycle $(C_OUT)/bench/bench_lifecycle_static py-wheel node-build
	@$(BENCH_REF) --table --n 10 >/dev/null # build it before the clock runs
	$(PY) scripts/bench_table.py --n $(TABLE_N) --batch $(TABLE_BATCH) --rounds $(TABLE_ROUNDS) \
		--ref '$(BENCH_REF)' \
		--c-so $(C_OUT)/bench/bench_lifecycle --c-a $(C_OUT)/bench/bench_lifecycle_static \
		--python '$(PY) py/bench/bench.py' --node 'node node/bench/bench.js'
