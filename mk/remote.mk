# Remote queues in the bindings (issue #8): the cross-language fleet test.
# Python's and Node's own remote cases run inside test-py / test-node
# (py/tests/test_remote.py, node/__test__/remote.test.js); this adds the
# multi-process one: 4 Python + 2 Node worker processes leasing 20,000 jobs
# from one server started (and stopped, by pid) by tests/remote/test_fleet.py.

TEST_TARGETS += test-remote

.PHONY: test-remote

## The fleet: zero double leases, each job completed once (pytest summary).
test-remote: py-wheel node-build
	$(PY) -m pytest -q -s -p no:cacheprovider tests/remote
