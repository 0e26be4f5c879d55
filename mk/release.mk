# Release artifacts for the targets `make dist` cannot reach (issue 47; mk/release.mk):
# `make dist-all` writes them into dist-all/, `make test-dist-all` installs
# each one. Neither is part of `make test`: every target here compiles
# RocksDB's C++ again, in a target dir of its own (91 min niced on 2 busy
# cores the first time, then kept; the Rust crates above it: 31 min).
#
#   dist-all/telha_jobs-V-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
#   dist-all/npm/telha-jobs-V.tgz, npm/telha-jobs-linux-x64-gnu-V.tgz
#   dist-all/c/telha-jobs-V-x86_64-linux-gnu.tar.gz   (shared library only: see below)
#   dist-all/cli/telha-V-x86_64-linux-gnu.tar.gz
#   dist-all/SHA256SUMS
#
# x86_64 for glibc 2.17 (manylinux2014: CentOS 7, Debian 8, Ubuntu 14.04,
# Amazon Linux 2 and everything later): zig is the C/C++ compiler and the
# linker, with glibc 2.17's symbol versions (PyPI's ziglang, through
# maturin --zig, which carries cargo-zigbuild inside). The wheel is built
# first; scripts/dist/zig/cargo records the environment maturin gave cargo,
# and the addon, the C library and telha are built by plain cargo in it
# (scripts/dist/zig/with-env): the same CC/CXX for librocksdb-sys, so its
# RocksDB is compiled once for all four. zig links its own libc++
# statically, so nothing needs libstdc++ and its GLIBCXX_ versions: the C
# tarball then has no .a (it would need zig's libc++ at the user's link
# time).
#
# Not built: aarch64 (a second RocksDB build, plus the rustup target) and
# macOS (no SDK here: zig cannot link against Apple's frameworks without it);
# see docs/ARCHITECTURE.md, "Release artifacts".

DIST_ALL_DIR := dist-all
DIST_ALL_WORK := $(HOME)/.cache/telha-jobs/dist-all-work
# The build tools, pinned together (see above), in a virtualenv of their own.
DIST_TOOLS := $(HOME)/.cache/telha-jobs/dist-venv
DIST_TOOLS_PKGS := "maturin==1.16.0" "ziglang==0.17.1" "auditwheel>=6"
DIST_TOOLS_STAMP := $(DIST_TOOLS)/.tools-$(shell printf '%s' '$(DIST_TOOLS_PKGS)' | cksum | cut -d' ' -f1)
DIST_GLIBC := 2.17
DIST_X64_TARGET := $(HOME)/.cache/telha-jobs/target-dist-x86_64-linux-gnu.$(DIST_GLIBC)
DIST_X64_OUT := $(DIST_X64_TARGET)/x86_64-unknown-linux-gnu/release
DIST_ZIG_ENV_FILE := $(DIST_X64_TARGET)/zig-env
# The build tools stay on PATH: the recorded `ar` wrapper is maturin itself
# (cargo-zigbuild's multicall), which finds zig there ("Failed to find zig"
# without it, for any crate whose build script archives C).
DIST_ZIGBUILD = PATH="$(DIST_TOOLS)/bin:$$PATH" scripts/dist/zig/with-env $(DIST_ZIG_ENV_FILE) \
	env CARGO_TARGET_DIR="$(DIST_X64_TARGET)" $(CARGO) build $(PROFILE) --target x86_64-unknown-linux-gnu
# The oldest Debian deb.debian.org still serves (tests/dist/rootfs.sh).
DIST_ROOTFS_SUITE := bullseye
DIST_ROOTFS := $(HOME)/.cache/telha-jobs/rootfs/$(DIST_ROOTFS_SUITE)-amd64

.PHONY: dist-all dist-all-clean dist-tools dist-all-wheel dist-all-zigbuild dist-all-npm \
	dist-all-c dist-all-cli dist-all-sums test-dist-all

## Every artifact of every target this machine can build (dist-all/).
dist-all: dist-all-clean dist-all-wheel dist-all-npm dist-all-c dist-all-cli dist-all-sums

dist-all-clean:
	rm -rf $(DIST_ALL_DIR) $(DIST_ALL_WORK)
	mkdir -p $(DIST_ALL_DIR) $(DIST_ALL_WORK)

dist-tools: $(DIST_TOOLS_STAMP)

$(DIST_TOOLS_STAMP):
	$(PYTHON3) -m venv $(DIST_TOOLS)
	$(DIST_TOOLS)/bin/python -m pip install -q --disable-pip-version-check $(DIST_TOOLS_PKGS)
	touch $@

## The manylinux2014 wheel (maturin --zig); auditwheel must report that tag.
dist-all-wheel: dist-tools
	@mkdir -p $(DIST_ALL_DIR) $(DIST_ALL_WORK)
	rm -rf $(DIST_X64_TARGET)/wheels
	rm -f $(DIST_ZIG_ENV_FILE)
	PATH="$(CURDIR)/scripts/dist/zig:$(DIST_TOOLS)/bin:$$PATH" CARGO_TARGET_DIR="$(DIST_X64_TARGET)" \
	TELHA_ZIG_ENV=$(DIST_ZIG_ENV_FILE) $(DIST_TOOLS)/bin/maturin build $(PROFILE) --zig --compatibility manylinux2014 \
		-m py/Cargo.toml -i $(DIST_TOOLS)/bin/python -o $(DIST_X64_TARGET)/wheels
	cp $(DIST_X64_TARGET)/wheels/telha_jobs-$(DIST_VERSION)-cp39-abi3-*.whl $(DIST_ALL_DIR)/
	@set -e; w=$$(ls $(DIST_ALL_DIR)/telha_jobs-*.whl); \
	$(DIST_TOOLS)/bin/auditwheel show "$$w" | tee $(DIST_ALL_WORK)/auditwheel.txt; \
	tag=$$(tr -s ' \n' ' ' < $(DIST_ALL_WORK)/auditwheel.txt | sed -n 's/.*following platform tag: *"\([^"]*\)".*/\1/p'); \
	[ "$$tag" = manylinux_2_17_x86_64 ] || { echo "dist-all-wheel: auditwheel says '$$tag', want manylinux_2_17_x86_64"; exit 1; }; \
	echo "dist-all-wheel: auditwheel: $$tag"

## The addon, the C library and telha in the wheel build's zig environment
## (one package per call, as every other build: librocksdb-sys stays Fresh).
dist-all-zigbuild: dist-all-wheel
	$(DIST_ZIGBUILD) -p telha-jobs-node
	$(DIST_ZIGBUILD) -p telha-jobs-ffi
	$(DIST_ZIGBUILD) -p telha-cli

## The npm packages: the glibc 2.17 addon under napi-rs's file name.
dist-all-npm: dist-all-zigbuild $(NODE_STAMP)
	@mkdir -p $(DIST_ALL_WORK)/addons
	cp $(DIST_X64_OUT)/libtelha_jobs_node.so $(DIST_ALL_WORK)/addons/telha-jobs.linux-x64-gnu.node
	python3 scripts/dist/elf_needs.py $(DIST_ALL_WORK)/addons/telha-jobs.linux-x64-gnu.node \
		--node-api-headers $(NODE_API_HEADERS) > $(DIST_ALL_WORK)/node-needs.json
	node scripts/dist/npm.js --node-dir node --addon-dir $(DIST_ALL_WORK)/addons --out $(DIST_ALL_DIR)/npm \
		--version $(DIST_VERSION) --needs $(DIST_ALL_WORK)/node-needs.json

dist-all-c: dist-all-zigbuild
	@ln -sf libtelha_jobs.so $(DIST_X64_OUT)/libtelha_jobs.so.$(C_ABI)
	python3 scripts/dist/elf_needs.py $(DIST_X64_OUT)/libtelha_jobs.so > $(DIST_ALL_WORK)/c-needs.json
	MAKE="$(MAKE)" scripts/dist/c-tarball.sh $(DIST_ALL_DIR)/c $(DIST_VERSION) $(C_ABI) $(DIST_ALL_WORK)/c-needs.json \
		x86_64 $(DIST_X64_OUT)

## The help text comes from the zig binary itself: it runs here (glibc 2.17
## and newer), so no host build of telha (a second RocksDB) is needed.
dist-all-cli: dist-all-zigbuild
	python3 scripts/dist/elf_needs.py $(DIST_X64_OUT)/telha > $(DIST_ALL_WORK)/cli-needs.json
	scripts/dist/cli-tarball.sh $(DIST_ALL_DIR)/cli $(DIST_VERSION) $(DIST_X64_OUT)/telha x86_64 gnu \
		$(DIST_ALL_WORK)/cli-needs.json

dist-all-sums:
	cd $(DIST_ALL_DIR) && rm -f SHA256SUMS && sha256sum *.whl npm/* c/* cli/* > SHA256SUMS
	@cd $(DIST_ALL_DIR) && ls -l *.whl npm/* c/* cli/* | awk '{printf "  %-72s %6.1f MB\n", $$9, $$5/1e6}'

## Each artifact checked against glibc $(DIST_GLIBC)'s symbol versions, then
## installed and run in the oldest Debian root file system reachable
## (tests/dist/test_oldglibc.sh).
test-dist-all: dist-all
	tests/dist/rootfs.sh $(DIST_ROOTFS_SUITE) amd64 $(DIST_ROOTFS)
	tests/dist/test_oldglibc.sh $(DIST_ALL_DIR) $(DIST_VERSION) README.md $(DIST_GLIBC) $(DIST_ROOTFS)
