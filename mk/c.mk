# The C ABI (issue #3): libtelha_jobs.so / .a, include/telha_jobs.h, C tests,
# the C bench row, `make install`.
#
# The C tests link the shared library (-Wl,-rpath to the target dir), which
# is what hosts ship against. An ASan-instrumented executable loads libasan
# first by itself, so no LD_PRELOAD is needed; the Rust library is not
# instrumented (its memory safety is Rust's), ASan/UBSan watch the C side and
# every pointer crossing the boundary. The static .a is exercised by the
# install test (examples/c/worker.c linked against it).

C_LIB_DIR := $(CARGO_TARGET_DIR)/release
# The SONAME's number (ffi-c/build.rs), equal to TJ_ABI_VERSION.
C_ABI := $(shell sed -n 's/^pub const TJ_ABI_VERSION: u32 = \([0-9]*\);/\1/p' ffi-c/src/lib.rs)
C_OUT := $(CARGO_TARGET_DIR)/c
C_STD := -std=c11 -Wall -Wextra -Werror
C_SAN := -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
C_INC := -Iinclude -Itests/c
C_LINK := -L$(C_LIB_DIR) -Wl,-rpath,$(C_LIB_DIR) -ltelha_jobs -lpthread
C_TESTS := test_api test_hostile test_guarantees test_config test_bounds test_control test_events test_schedules test_scopes test_serve
C_HEADERS := include/telha_jobs.h tests/c/harness.h tests/c/test_control_flow.h tests/c/test_control_steer.h tests/c/test_control_tags.h tests/c/test_control_backup.h tests/c/test_control_fanin.h tests/c/test_control_find.h tests/c/test_control_keys.h tests/c/test_schedule_tags.h
# What the static library needs besides itself (rustc --print native-static-libs).
C_STATIC_DEPS := -lstdc++ -lgcc_s -lutil -lrt -lpthread -lm -ldl
# Sanitizer runs: ASan (with LeakSanitizer) catches invalid accesses and
# leaks on the C side, UBSan every undefined operation; either fails the run.
C_ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Valgrind runs are ~50x slower: fewer jobs in the heavy tests.
C_VALGRIND_JOBS ?= 3000
C_VALGRIND := valgrind -q --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible --suppressions=tests/c/valgrind.supp

TEST_TARGETS += test-c
BENCH_TARGETS += bench-c
INSTALL_TARGETS += install-c

.PHONY: demo-c c-deps c-lib c-header test-c test-c-reset test-c-asan test-c-cxx test-c-readme test-c-valgrind test-c-install test-c-python bench-c bench-c-smoke install-c install-c-files

## Build libtelha_jobs.so and libtelha_jobs.a (same profile and target dir as everything else).
c-lib:
	$(CARGO) build $(PROFILE) -p telha-jobs-ffi
	@ln -sf libtelha_jobs.so $(C_LIB_DIR)/libtelha_jobs.so.$(C_ABI)

## Regenerate include/telha_jobs.h from ffi-c/src (cargo test checks it is current).
c-header:
	TJ_BLESS_HEADER=1 $(CARGO) test $(PROFILE) -p telha-jobs-ffi --test header

# Every C test program's summary line is also appended here; test-c adds
# them up. The bench smoke runs first, so the run ends with a summary line.
C_SUMMARY := $(C_OUT)/summary.txt
C_TEE := 2>&1 | tee -a $(C_SUMMARY)

test-c: test-c-reset bench-c-smoke test-c-asan test-c-cxx test-c-readme test-c-valgrind test-c-install test-c-python
	@awk '/^[0-9]+ passed, [0-9]+ failed$$/ {p += $$1; f += $$3; n++} \
	  END {printf "C tests (%d programs): %d passed, %d failed\n", n, p, f; exit f > 0}' $(C_SUMMARY)

test-c-reset:
	@mkdir -p $(C_OUT); : > $(C_SUMMARY)

$(C_OUT)/asan/%: tests/c/%.c $(C_HEADERS) c-lib
	@mkdir -p $(@D)
	$(CC) $(C_STD) $(C_SAN) $(C_INC) -o $@ $< $(C_LINK)

$(C_OUT)/plain/%: tests/c/%.c $(C_HEADERS) c-lib
	@mkdir -p $(@D)
	$(CC) $(C_STD) -g -O1 $(C_INC) -o $@ $< $(C_LINK)

## C tests under AddressSanitizer + UBSan, each ending "N passed, N failed".
test-c-asan: $(addprefix $(C_OUT)/asan/,$(C_TESTS))
	@set -eo pipefail; for t in $(C_TESTS); do echo "== $$t (asan, ubsan)"; $(C_ASAN_ENV) $(C_OUT)/asan/$$t $(C_TEE); done

# The worker example as an ASan host (test-c-python).
$(C_OUT)/asan/worker: examples/c/worker.c include/telha_jobs.h c-lib
	@mkdir -p $(@D)
	$(CC) $(C_STD) $(C_SAN) -Iinclude -o $@ $< $(C_LINK)

## A C host serves its store and a Python process works it (issue 46):
## examples/c/worker.c and tests/c/serve_host.c, built with ASan + UBSan,
## each the host in its own process; tests/c/serve_python.py is the client
## (telha_jobs.connect, the wheel from py-wheel), so no libasan is preloaded
## into Python.
test-c-python: $(C_OUT)/asan/worker $(C_OUT)/asan/serve_host py-wheel
	@set -o pipefail; echo "== serve_python (C hosts under asan, ubsan; Python clients)"; \
	$(C_ASAN_ENV) $(PY) tests/c/serve_python.py $(C_OUT)/asan/worker $(C_OUT)/asan/serve_host $(C_TEE)

## One C++ translation unit (g++) including the header (twice).
test-c-cxx: tests/c/test_cxx.cpp $(C_HEADERS) c-lib
	@mkdir -p $(C_OUT)/asan
	$(CXX) -std=c++17 -Wall -Wextra -Werror $(C_SAN) $(C_INC) -o $(C_OUT)/asan/test_cxx $< $(C_LINK)
	@set -o pipefail; echo "== test_cxx (g++, asan, ubsan)"; $(C_ASAN_ENV) $(C_OUT)/asan/test_cxx $(C_TEE)

## The same C tests under valgrind (no sanitizers, fewer jobs), when valgrind is present.
test-c-valgrind: $(addprefix $(C_OUT)/plain/,$(C_TESTS))
	@if ! command -v valgrind >/dev/null 2>&1; then echo "valgrind not installed: skipping the valgrind runs"; exit 0; fi; \
	set -eo pipefail; for t in $(C_TESTS); do echo "== $$t (valgrind, TJ_TEST_JOBS=$(C_VALGRIND_JOBS))"; \
	TJ_TEST_JOBS=$(C_VALGRIND_JOBS) $(C_VALGRIND) $(C_OUT)/plain/$$t $(C_TEE); done

C_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

## Install the library, the header and telha_jobs.pc under $(PREFIX) (and $(DESTDIR)).
install-c: c-lib
	@$(MAKE) -s --no-print-directory install-c-files

## What install-c copies, from C_LIB_DIR as built (the dist-all tarballs
## pass another build's directory).
install-c-files:
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 644 include/telha_jobs.h $(DESTDIR)$(PREFIX)/include/telha_jobs.h
	install -m 755 $(C_LIB_DIR)/libtelha_jobs.so $(DESTDIR)$(PREFIX)/lib/libtelha_jobs.so.$(C_VERSION)
	ln -sf libtelha_jobs.so.$(C_VERSION) $(DESTDIR)$(PREFIX)/lib/libtelha_jobs.so.$(C_ABI)
	ln -sf libtelha_jobs.so.$(C_ABI) $(DESTDIR)$(PREFIX)/lib/libtelha_jobs.so
	install -m 644 $(C_LIB_DIR)/libtelha_jobs.a $(DESTDIR)$(PREFIX)/lib/libtelha_jobs.a
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(C_VERSION)|g' ffi-c/telha_jobs.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/telha_jobs.pc
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && { [ "$(PREFIX)" = /usr/local ] || [ "$(PREFIX)" = /usr ]; }; then ldconfig; fi

## pkg-config for the install test (apt-get only when it is missing).
c-deps:
	@command -v pkg-config >/dev/null 2>&1 || { \
	  echo "c-deps: installing pkg-config"; SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq pkg-config >/dev/null; }

## Install into a temporary PREFIX, then build examples/c/worker.c with
## `cc ... $(pkg-config --cflags --libs telha_jobs)` (shared) and with the
## .pc's static_libs (static), and run both.
test-c-install: c-deps
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(MAKE) -s --no-print-directory install-c PREFIX=$$tmp/prefix; \
	export PKG_CONFIG_PATH=$$tmp/prefix/lib/pkgconfig; \
	echo "== examples/c/worker.c against an install in $$tmp/prefix"; \
	echo "cc examples/c/worker.c \$$(pkg-config --cflags --libs telha_jobs)"; \
	$(CC) $(C_STD) examples/c/worker.c $$(pkg-config --cflags --libs telha_jobs) -o $$tmp/worker; \
	readelf -d $$tmp/worker | grep -q 'NEEDED.*\[libtelha_jobs\.so\.$(C_ABI)\]'; \
	LD_LIBRARY_PATH=$$tmp/prefix/lib $$tmp/worker $$tmp/store-shared 200 | tee $$tmp/out-shared; \
	grep -q '^worker: 200 completed, 0 lost, [1-9][0-9]* heartbeats, 1 cancelled, 1 timed out, 200 follow-ups$$' $$tmp/out-shared; \
	echo "cc examples/c/worker.c \$$(pkg-config --cflags telha_jobs) \$$(pkg-config --variable=static_libs telha_jobs)"; \
	$(CC) $(C_STD) examples/c/worker.c $$(pkg-config --cflags telha_jobs) $$(pkg-config --variable=static_libs telha_jobs) -o $$tmp/worker-static; \
	if ldd $$tmp/worker-static | grep -q libtelha_jobs; then echo "worker-static links the .so"; exit 1; fi; \
	$$tmp/worker-static $$tmp/store-static 200 | tee $$tmp/out-static; \
	grep -q '^worker: 200 completed, 0 lost, [1-9][0-9]* heartbeats, 1 cancelled, 1 timed out, 200 follow-ups$$' $$tmp/out-static; \
	echo "2 passed, 0 failed" $(C_TEE)

C_BENCH_N ?= 20000
C_BENCH_ROUNDS ?= 5

$(C_OUT)/bench/bench_lifecycle: tests/c/bench_lifecycle.c $(C_HEADERS) c-lib
	@mkdir -p $(@D)
	$(CC) $(C_STD) -O2 $(C_INC) -o $@ $< $(C_LINK)

# The same program linked against the static library.
$(C_OUT)/bench/bench_lifecycle_static: tests/c/bench_lifecycle.c $(C_HEADERS) c-lib
	@mkdir -p $(@D)
	$(CC) $(C_STD) -O2 $(C_INC) -o $@ $< $(C_LIB_DIR)/libtelha_jobs.a $(C_STATIC_DEPS)

## The C row of the benchmark: lifecycle/s through the C API beside the Rust
## core's figures ($(BENCH_REF), JSON) from the same run.
bench-c: $(C_OUT)/bench/bench_lifecycle $(C_OUT)/bench/bench_lifecycle_static
	@$(BENCH_REF) --n 10 >/dev/null # build it before the clock runs
	$(C_OUT)/bench/bench_lifecycle $(C_BENCH_N) $(C_BENCH_ROUNDS) '$(BENCH_REF) --n $(C_BENCH_N)' "C API (libtelha_jobs.so)"
	$(C_OUT)/bench/bench_lifecycle_static $(C_BENCH_N) $(C_BENCH_ROUNDS) '$(BENCH_REF) --n $(C_BENCH_N)' "C API (libtelha_jobs.a)"

## A tiny bench run for make test (a smoke test: the numbers are not judged).
bench-c-smoke:
	@$(MAKE) -s --no-print-directory bench-c C_BENCH_N=2000 C_BENCH_ROUNDS=1

## The README's C example, compiled and run as the body of main().
test-c-readme: c-lib
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	{ printf '#include <stdio.h>\n#include <telha_jobs.h>\nint main(void) {\n'; \
	  awk '/^## C$$/{c=1} c && /^```c$$/{p=1; next} p && /^```$$/{exit} p' README.md; \
	  printf 'return 0;\n}\n'; } > $$tmp/readme.c; \
	$(CC) $(C_STD) $(C_SAN) $(C_INC) -o $$tmp/readme $$tmp/readme.c $(C_LINK); \
	echo "== README C example"; \
	(cd $$tmp && $(C_ASAN_ENV) ./readme) > $$tmp/out; \
	if [ -s $$tmp/out ]; then cat $$tmp/out; echo "0 passed, 1 failed" $(C_TEE); exit 1; fi; \
	echo "1 passed, 0 failed" $(C_TEE)

## The C worker example on the default store ($$TELHA_DB, else ./telha-data).
## Not the DEMO_TARGET (that stays the Rust demo): `make demo-c`.
demo-c: c-lib
	@mkdir -p $(C_OUT)
	$(CC) $(C_STD) -O2 -Iinclude -o $(C_OUT)/worker examples/c/worker.c $(C_LINK)
	$(C_OUT)/worker "$${TELHA_DB:-telha-data}" 200
