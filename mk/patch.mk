# The [patch.crates-io] section of Cargo.toml: vendor/prost-derive
# (README.telha there says what differs from upstream and why).
#
# `make check-vendor` shows the patch is still needed: it resolves the
# workspace with and without it (`cargo tree` only, nothing is compiled,
# ~10 s) and checks that with upstream prost-derive the builds the Makefile
# runs would give `either` different features (so RocksDB would be compiled
# twice), and with the patch the same. A prerequisite of `lint`, so
# `make test` runs it early; it ends with "check-vendor: N passed, N failed".

.PHONY: check-vendor

check-vendor:
	@bash scripts/check-vendor-prost-derive.sh

lint: check-vendor
