# The gRPC server, client and protocol (issue #8): proto/, server/, client/,
# and the CLI's `telha serve` / `--server`.
#
# proto, server and client are default members, so `make build` builds them
# and test-core's `cargo test --release` runs all their tests (and the CLI's
# tests/serve/, which drive the real `telha serve`). test-server runs the
# quick remote bench, then the round-trip and process tests again by name,
# so `make test` shows them together and ends with cargo test's summary.
# `make bench` runs bench-server: the core's reference figures (raw RocksDB,
# same run), then remote vs in-process lifecycle/s at 1 and 16 clients.
# `make install` needs nothing more: `serve` is a subcommand of the `telha`
# binary that install-cli installs.
#
# The generated code (proto/src/gen/) is committed; its generator
# (proto/gen/, protox + tonic-prost-build, no system protoc) stays out of
# the workspace (see proto/gen/Cargo.toml). `make proto-gen` regenerates it;
# `make proto-check` regenerates into a temporary directory and diffs (a
# cold build of the generator takes a few minutes, so it is not in `make
# test`; the proto crate's drift test checks the .proto's recorded hash).

.PHONY: test-server bench-server bench-server-quick proto-gen proto-check check-promtool

PROTO_GEN_TARGET ?= $(CARGO_TARGET_DIR)/proto-gen
PROTO_GEN = CARGO_TARGET_DIR=$(PROTO_GEN_TARGET) $(CARGO) run $(PROFILE) -q --manifest-path proto/gen/Cargo.toml --

TEST_TARGETS += test-server
BENCH_TARGETS += bench-server

test-server: deps bench-server-quick
	$(CARGO) test $(PROFILE) --test roundtrip --test roundtrip_stats --test settle_many --test deploy_examples --test transport --test poll_stream --test poll_stop --test worker_remote --test events --test serve --test schedules --test ui_api --test ui_auth --test ui_tls --test ui_scale --test ui_scopes --test tags --test find --test fanin

## Optional, not in `make test`: Prometheus' own linter, `promtool check
## metrics`, over a real server's /metrics after real calls (Debian's
## prometheus package carries promtool; installed when missing).
check-promtool: deps
	@command -v promtool >/dev/null || { echo "promtool is missing: installing Debian's prometheus"; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus; }
	$(CARGO) test $(PROFILE) -p telha-jobs-server --test deploy_examples -- --ignored --nocapture

## A small remote bench run for make test (a smoke test: numbers not judged).
bench-server-quick: deps
	$(CARGO) run $(PROFILE) -q -p telha-jobs-server --example bench_remote -- --quick

SERVER_BENCH_REF = $(CARGO_TARGET_DIR)/bench-ref-server.json
SERVER_BENCH_N ?= 32000

bench-server: deps
	$(BENCH_REF) --n $(SERVER_BENCH_N) > "$(SERVER_BENCH_REF)"
	$(CARGO) run $(PROFILE) -q -p telha-jobs-server --example bench_remote -- --n $(SERVER_BENCH_N) --ref-file "$(SERVER_BENCH_REF)"

proto-gen:
	$(PROTO_GEN) proto/src/gen

proto-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(PROTO_GEN) "$$tmp" >/dev/null; \
	diff -u proto/src/gen/telha.jobs.v1.rs "$$tmp/telha.jobs.v1.rs"; \
	diff -u proto/src/gen/jobs.proto.fnv64 "$$tmp/jobs.proto.fnv64"; \
	diff -u proto/src/gen/telha.cluster.v1.rs "$$tmp/telha.cluster.v1.rs"; \
	diff -u proto/src/gen/raft.proto.fnv64 "$$tmp/raft.proto.fnv64"; \
	diff -u proto/src/gen/admin.proto.fnv64 "$$tmp/admin.proto.fnv64"; \
	echo "proto/src/gen is current: 1 passed, 0 failed"

## Steering waiting jobs (issue 44): the RPCs and the page's actions.
TEST_TARGETS += test-server-steer
test-server-steer: deps
	$(CARGO) test $(PROFILE) -p telha-jobs-server --test steer --test ui_steer
