# Issue #14: the cargo-fuzz targets in fuzz/ (record, key, payload, store
# marker and config parsers), run for real. NOT part of `make test` (not in
# TEST_TARGETS): it takes FUZZ_SECONDS per target (default 300, five targets).
#
# The fuzz crate takes telha-jobs without its `rocksdb` feature, so no C++
# but libFuzzer's is built, and it builds with sanitizer flags into its own
# target dir, FUZZ_TARGET_DIR, so it never shares or disturbs the main
# cache. cargo-fuzz is installed once from crates.io into FUZZ_TOOLS and
# runs on the stable toolchain with RUSTC_BOOTSTRAP=1 (fuzz/run.sh).
#
#   make fuzz                          every target, 300 s each
#   make fuzz FUZZ_SECONDS=30          a quick pass
#   make fuzz FUZZ_TARGETS=record_decoder

FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?= record_decoder key_decoder payload_decoder format_marker config_parser
FUZZ_TARGET_DIR ?= $(CARGO_TARGET_DIR)/fuzz
FUZZ_TOOLS ?= $(HOME)/.cache/telha-jobs/tools
CARGO_FUZZ ?= $(FUZZ_TOOLS)/bin/cargo-fuzz

.PHONY: fuzz fuzz-tools

## cargo-fuzz, installed once (its build goes to its own dir under FUZZ_TOOLS).
fuzz-tools: $(CARGO_FUZZ)

$(CARGO_FUZZ):
	CARGO_TARGET_DIR=$(FUZZ_TOOLS)/build $(CARGO) install cargo-fuzz --locked --root $(FUZZ_TOOLS)

## Seeds, build, then each target for FUZZ_SECONDS; ends with
## "fuzz: N passed, N failed".
fuzz: fuzz-tools
	CARGO="$(CARGO)" CARGO_FUZZ="$(CARGO_FUZZ)" FUZZ_TARGET_DIR="$(FUZZ_TARGET_DIR)" \
	FUZZ_SECONDS="$(FUZZ_SECONDS)" FUZZ_TARGETS="$(FUZZ_TARGETS)" bash fuzz/run.sh
