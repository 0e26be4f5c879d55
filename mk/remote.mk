# Remote queues in the bindings (issue #8): the cross-language fleet test.
# Python's and Node's own remote cases run inside test-py / test-node
# (py/tests/test_remote.py, node/__test__/remote.test.js); this adds the
# multi-process one: 4 Python + 2 Node worker processes leasing 20,000 jobs
# from one server started (and stopped, by pid) by tests/remote/test_fleet.py;
# and test_control.py: cancel, timeout and max_lease_total across processes,
# through a real `telha serve` process and the `telha` CLI; test_prefetch.py:
# the Worker leasing ahead and settling in batches over a remote queue
# (issue 15); test_wait.py: a Node producer waiting for 1,000 jobs that Python
# Worker processes complete through `telha serve` (issue 18);
# test_schedules.py: a schedule put from Python, listed from Node and the
# CLI, firing into Python and Node worker processes (issue 17);
# test_deadlines.py: Python, Node (deadline_client.js) and CLI calls against
# a listener that never answers and a SIGSTOPped `telha serve` end by their
# deadlines and work again after SIGCONT, and a Worker paused past its TTL
# runs no job twice and stops in time (issue 48); test_restart.py: a
# Python and a Node Worker on a list of two addresses ride out three
# SIGKILLed restarts of `telha serve` with no error and each job once
# (issue 36); test_otel.py: a Node producer inside an OpenTelemetry span
# (node_trace_producer.js) and a Python Worker through `telha serve` give
# one trace, a retried job two linked process spans (issue 45). `make
# bench-fleet` (in `make bench`): worker processes through `telha serve`
# beside the in-process Worker (tests/remote/bench_fleet.py).

TEST_TARGETS += test-remote
BENCH_TARGETS += bench-fleet

.PHONY: test-remote bench-fleet

## The fleet: zero double leases, each job completed once; and job control
## across processes: a real `telha serve`, Python and Node Workers, the CLI's
## cancel through --server (pytest summary).
test-remote: py-wheel node-build build-cli
	TELHA_BIN=$(CLI_BIN) $(PY) -m pytest -q -s -p no:cacheprovider tests/remote

## Issue 15's fleet bench: 4 Python + 4 Node worker processes (one job at a
## time) through a real `telha serve`, beside the in-process Worker, the
## Rust core's 4 pollers and raw RocksDB, measured in the same run; each
## fleet row with the CPU per job of the server and of its workers.
bench-fleet: py-wheel node-build build-cli
	$(PY) tests/remote/bench_fleet.py --telha $(CLI_BIN) --ref "$(BENCH_REF)"
