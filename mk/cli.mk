# The operator CLI (cli/, issue #6): the `telha` binary.
#
# cli/ is a default member, so `make build` builds the binary and
# `make test` runs its tests in test-core (`cargo test --release`: unit
# tests and cli/tests/telha/, which drive the real binary). `make test-cli`
# runs them alone. `make install` copies the binary to $(PREFIX)/bin.
# `make bench` runs bench-cli: the core's reference figures (raw RocksDB,
# same run) first, then what the commands cost beside them.

.PHONY: build-cli test-cli install-cli bench-cli

CLI_BIN = $(CARGO_TARGET_DIR)/release/telha

build-cli: deps
	$(CARGO) build $(PROFILE) -p telha-cli

test-cli: deps
	$(CARGO) test $(PROFILE) -p telha-cli

install-cli: build-cli
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 "$(CLI_BIN)" "$(DESTDIR)$(PREFIX)/bin/telha"

INSTALL_TARGETS += install-cli

CLI_BENCH_REF = $(CARGO_TARGET_DIR)/bench-ref-cli.json

bench-cli: deps
	$(BENCH_REF) --n 20000 > "$(CLI_BENCH_REF)"
	TELHA_BENCH_REF="$(CLI_BENCH_REF)" $(CARGO) bench -p telha-cli --bench cli

BENCH_TARGETS += bench-cli
