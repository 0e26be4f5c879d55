# telha-jobs. The two commands that matter: `make demo` and `make test`.
#
# RocksDB's C++ takes ~40 min to compile on a 2-core machine, so everything
# here builds with ONE cargo profile (release), no --target, and one target
# directory outside the checkout that every run (and CI) reuses.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(HOME)/.cache/telha-jobs/target
CARGO ?= cargo
PROFILE := --release

.PHONY: all deps build test test-core lint fmt doc demo bench bench-quick clean-store

all: build

deps:
	@bash scripts/ensure-deps.sh

build: deps
	$(CARGO) build $(PROFILE) --workspace --all-targets

## Every test: lint, a quick smoke run of the benchmark, then unit,
## integration (contention, kill -9 recovery, poison, stale submit, ...) and
## doc tests, so the run ends with cargo test's summary lines.
test: deps build lint bench-quick test-core

test-core:
	$(CARGO) test $(PROFILE) --workspace

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy $(PROFILE) --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

## API docs, into $$CARGO_TARGET_DIR/doc (same profile: no second C++ build).
doc: deps
	$(CARGO) doc $(PROFILE) -p telha-jobs --no-deps
	@echo "open $(CARGO_TARGET_DIR)/doc/telha_jobs/index.html"

## The main job on the embedded default store ($$TELHA_DB, else ./telha-data).
demo: deps
	$(CARGO) run $(PROFILE) -p telha-jobs --example demo

## The benchmark table (README "Performance"). Several minutes.
bench: deps
	$(CARGO) bench -p telha-jobs --bench queue

bench-quick:
	$(CARGO) bench -p telha-jobs --bench queue -- --quick

clean-store:
	rm -rf telha-data
