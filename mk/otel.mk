# Issue 45, the Rust side of tracing: the core's optional `otel` feature
# (docs/rust.md, "Tracing"), tested with opentelemetry_sdk's in-memory span
# exporter in its own crate, tests/otel (telha-jobs-otel-tests), so the SDK
# never joins the core's own test build. Enqueue (Queue and RemoteQueue)
# carries the current trace context; the Worker runs each attempt in a
# CONSUMER span linked to it; a retry gives a second linked span.
#
# The default builds (core, C, Python, Node) have no opentelemetry:
# `make check-otel-off` shows it, and scripts/check-rocksdb-build-graph.sh
# checks this build's RocksDB graph beside the others.

TEST_TARGETS += test-otel

.PHONY: test-otel check-otel-off

## The core's `otel` feature through enqueue and the Worker; ends with
## cargo test's "test result: ok. N passed; 0 failed" line.
test-otel: check-otel-off
	$(CARGO) test $(PROFILE) -p telha-jobs-otel-tests --test otel

## No opentelemetry package in the core's default dependency graph.
check-otel-off:
	@n=$$($(CARGO) tree --locked -q -p telha-jobs -e normal | grep -c opentelemetry || true); \
	if [ "$$n" != 0 ]; then echo "check-otel-off: opentelemetry in the default core build ($$n lines)"; exit 1; fi; \
	echo "check-otel-off: no opentelemetry without the feature"
