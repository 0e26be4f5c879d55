# Conformance (issue #7): the declarative scenarios of tests/scenarios/ run
# by four runners (Rust, Python, Node, C; a fifth, through the server, is
# server/tests/scenarios_remote.rs), and the cross-language round trip
# of tests/roundtrip/ (Node enqueues, Python completes half, C fails the
# rest, the CLI lists them) on one store.
#
# Each runner prints how many cases it ran and ends with its runner's
# summary line; each fails when a case fails or fewer cases ran than there
# are files. The Python and Node prerequisites are the py.mk / node.mk
# targets (the wheel in the shared virtualenv, the addon in node/), the C
# runner links the same libtelha_jobs.so as mk/c.mk's tests, under
# ASan/UBSan with leak checking.

.PHONY: test-conformance test-scenarios test-scenarios-rust test-scenarios-py \
	test-scenarios-node test-scenarios-c test-roundtrip

TEST_TARGETS += test-conformance

CONF_OUT := $(CARGO_TARGET_DIR)/conformance

## Every scenario runner, then the round trip.
test-conformance: test-scenarios test-roundtrip

test-scenarios: test-scenarios-rust test-scenarios-py test-scenarios-node test-scenarios-c

## The Rust runner (core/tests/scenarios.rs, harness = false; also part of
## `cargo test`, so test-core runs it too).
test-scenarios-rust:
	$(CARGO) test $(PROFILE) -p telha-jobs --test scenarios

## The Python runner (also collected by test-py's pytest run); -s shows its count.
test-scenarios-py: py-wheel
	cd py && $(PY) -m pytest -q -s tests/test_scenarios.py

## The Node runner (node/test/, outside test-node's __test__/).
test-scenarios-node: node-build
	cd node && node --test --test-reporter=spec test/scenarios.test.js

C_SCENARIO_SRC := tests/c/scenarios.c tests/c/scenario_ops.c tests/c/scenario_control.c tests/c/scenario_schedules.c tests/c/scenario_settle_many.c tests/c/scenario_tags.c tests/c/scenario_fanin.c

$(CONF_OUT)/scenarios: $(C_SCENARIO_SRC) tests/c/scenario.h tests/c/mini_json.h include/telha_jobs.h c-lib
	@mkdir -p $(@D)
	$(CC) $(C_STD) $(C_SAN) $(C_INC) -o $@ $(C_SCENARIO_SRC) $(C_LINK) -lm

## The C runner under ASan/UBSan (leaks included); its own "N passed, N failed" line.
test-scenarios-c: $(CONF_OUT)/scenarios
	$(C_ASAN_ENV) $(CONF_OUT)/scenarios tests/scenarios

$(CONF_OUT)/fail_rest: tests/roundtrip/fail_rest.c tests/c/mini_json.h include/telha_jobs.h c-lib
	@mkdir -p $(@D)
	$(CC) $(C_STD) $(C_SAN) $(C_INC) -o $@ $< $(C_LINK) -lm

## The cross-language round trip (tests/roundtrip/run.sh): Node, Python, C
## (under ASan/UBSan), then Python, the CLI and Node read everything back.
test-roundtrip: py-wheel node-build build-cli $(CONF_OUT)/fail_rest
	$(C_ASAN_ENV) tests/roundtrip/run.sh $(PY) $(CONF_OUT)/fail_rest $(CLI_BIN)
