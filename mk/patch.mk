# The [patch.crates-io] section of Cargo.toml: vendor/prost-derive and
# vendor/openraft (README.telha in each says what differs from upstream and
# why). scripts/check-vendor-openraft.sh checks that vendor/openraft is the
# published 0.9.25 plus vendor/openraft/telha.patch, nothing else.
#
# `make check-vendor` shows the patch is still needed: it resolves the
# workspace with and without it (`cargo tree` only, nothing is compiled,
# ~10 s) and checks that with upstream prost-derive the builds the Makefile
# runs would give `either` different features (so RocksDB would be compiled
# twice), and with the patch the same. A prerequisite of `lint`, so
# `make test` runs it early; it ends with "check-vendor: N passed, N failed".
#
# It also checks that RocksDB's whole build graph (librocksdb-sys, lz4-sys,
# and bindgen's host graph: cexpr, nom, memchr, clang-sys, itertools,
# either, syn, regex, cc, ...) keeps the versions and features listed in
# scripts/rocksdb-build-graph.txt in every build the Makefile runs, so a
# new dependency (openraft, issue 38) cannot make cargo compile RocksDB
# again; scripts/check-rocksdb-build-graph.sh --update after an intended
# change.

.PHONY: check-vendor

check-vendor:
	@bash scripts/check-vendor-prost-derive.sh
	@bash scripts/check-vendor-openraft.sh
	@bash scripts/check-rocksdb-build-graph.sh

lint: check-vendor
