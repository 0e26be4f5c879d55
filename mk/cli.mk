# The operator CLI (cli/, issue #6): the `telha` binary.
#
# cli/ is a default member, so `make build` builds the binary and
# `make test` runs its tests in test-core (`cargo test --release`: unit
# tests and cli/tests/telha/, which drive the real binary). `make test-cli`
# runs them alone. `make install` copies the binary to $(PREFIX)/bin.
# `make bench` runs bench-cli: the core's reference figures (raw RocksDB,
# same run) first, then what the commands cost beside them.

.PHONY: build-cli test-cli install-cli bench-cli deps-cli

# The bulk-retry prompt test runs the CLI on a pseudo-terminal with
# util-linux `script` (bsdutils, essential on Debian; installed if a slimmed
# image lacks it). Hooked into `deps`, which every build and test needs.
deps: deps-cli
deps-cli:
	@command -v script >/dev/null 2>&1 || { \
	  echo "deps-cli: installing bsdutils (script)"; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq bsdutils >/dev/null; }

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
