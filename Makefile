# telha-jobs. The two commands that matter: `make demo` and `make test`.
#
# RocksDB's C++ takes ~40 min to compile on a 2-core machine, so everything
# here builds with ONE cargo profile (release), no --target, and one target
# directory outside the checkout that every run (and CI) reuses.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(HOME)/.cache/telha-jobs/target
CARGO ?= cargo
PROFILE := --release

.PHONY: all deps build test test-core lint fmt doc demo demo-rust bench bench-core bench-callgrind bench-quick bench-memory install clean-store generated

# Each front end (C, Python, Node, CLI) keeps its rules in mk/<name>.mk and
# adds its targets to these lists; `make test` runs them after the core.
TEST_TARGETS :=
BENCH_TARGETS :=
INSTALL_TARGETS :=
DEMO_TARGET := demo-rust
PREFIX ?= /usr/local
-include $(sort $(wildcard mk/*.mk))

all: build

deps:
	@bash scripts/ensure-deps.sh

## The default members (core, C library, CLI); the Python wheel and the Node
## addon are built by maturin / napi in their own mk/ rules (same profile,
## same target dir).
build: deps
	$(CARGO) build $(PROFILE) --all-targets

## Every test: lint, a quick smoke run of the benchmark, then unit,
## integration (contention, kill -9 recovery, poison, stale submit, ...) and
## doc tests, so the run ends with cargo test's summary lines.
test: deps build lint bench-quick test-core $(TEST_TARGETS)

test-core:
	$(CARGO) test $(PROFILE)

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy $(PROFILE) --workspace --all-targets -- -D warnings
	# The decoders alone, as the fuzz targets build them (no C++): mk/fuzz.mk.
	$(CARGO) clippy $(PROFILE) -p telha-jobs --no-default-features --lib -- -D warnings

fmt:
	$(CARGO) fmt --all

## API docs, into $$CARGO_TARGET_DIR/doc (same profile: no second C++ build).
doc: deps
	$(CARGO) doc $(PROFILE) -p telha-jobs --no-deps
	@echo "open $(CARGO_TARGET_DIR)/doc/telha_jobs/index.html"

## The main job on the embedded default store ($$TELHA_DB, else ./telha-data).
demo: deps $(DEMO_TARGET)

demo-rust:
	$(CARGO) run $(PROFILE) -p telha-jobs --example demo

## The benchmark table (README "Performance"). Several minutes.
bench: deps bench-core bench-callgrind $(BENCH_TARGETS)

bench-core:
	$(CARGO) bench -p telha-jobs --bench queue
	$(CARGO) bench -p telha-jobs --bench queue -- --unique
	$(CARGO) bench -p telha-jobs --bench queue -- --fanin
	$(CARGO) bench -p telha-jobs --bench queue -- --tags
	$(CARGO) bench -p telha-jobs --bench queue -- --prune-windows
	$(CARGO) bench -p telha-jobs --bench queue -- --trace
	$(CARGO) bench -p telha-jobs --bench queue -- --backup
	$(CARGO) bench -p telha-jobs --bench cost
	$(CARGO) bench -p telha-jobs --bench events
	$(CARGO) bench -p telha-jobs --bench schedules

## Issue 45's instruction-count rows (callgrind, one run; skipped without
## valgrind): what the wait and run-time histograms cost a lifecycle (they
## cannot be turned off: the lifecycle beside itself minus what they
## execute), and an enqueue and a lifecycle with a W3C traceparent in the
## metadata beside the same without (scripts/callgrind_rows.py).
bench-callgrind:
	$(CARGO) build $(PROFILE) -q -p telha-jobs --example lifecycle_calls
	python3 scripts/callgrind_rows.py $(CARGO_TARGET_DIR)/release/examples/lifecycle_calls 2000

## The reference figures (Rust core + raw RocksDB, JSON) that each binding's
## benchmark prints itself beside, measured in the same run.
BENCH_REF = $(CARGO) run $(PROFILE) -q -p telha-jobs --example bench_ref --

bench-quick:
	$(CARGO) bench -p telha-jobs --bench queue -- --quick

## Resident memory after SOAK_N lifecycles with a new scope per job, beside
## one scope for all, each in a fresh process (issue 50). A few minutes.
SOAK_N ?= 1000000
bench-memory:
	$(CARGO) run $(PROFILE) -q -p telha-jobs --example soak_scopes -- --n $(SOAK_N)

## Installs what the front ends' mk/ files contribute (library, header,
## pkg-config file, CLI) under $$(PREFIX).
install: $(INSTALL_TARGETS)

## Every committed generated file, rewritten from its source, in one go:
## include/telha_jobs.h (cbindgen over ffi-c/src: c-header, mk/c.mk), the
## gRPC code proto/src/gen/ (protox + tonic-prost-build: proto-gen,
## mk/server.mk), node/index.js and node/index.d.ts (napi build:
## node-generated, mk/node.mk). The drift checks in `make test` name this
## target: ffi-c/tests/header.rs (test-core), the proto crate's hash test
## (test-core) and node/__test__/generated.test.js (test-node).
generated: c-header proto-gen node-generated

clean-store:
	rm -rf telha-data
