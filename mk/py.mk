# Python package (py/): the PyO3 wheel built by maturin (same release
# profile, no --target, the shared CARGO_TARGET_DIR, so RocksDB stays built),
# installed into a virtualenv kept under the target dir and reused.

PYTHON3 ?= python3
PY_VENV := $(CARGO_TARGET_DIR)/py-venv
PY := $(PY_VENV)/bin/python
PY_WHEELS := $(CARGO_TARGET_DIR)/py-wheels
# opentelemetry-api/-sdk: the trace-context tests (py/tests/test_otel.py;
# the package itself imports neither unless the application has).
PY_TOOLS := "maturin>=1.16,<2" "pytest>=8" "mypy>=1.10" "hypothesis>=6.100" \
	"opentelemetry-api>=1.20" "opentelemetry-sdk>=1.20"
# One stamp per tool list: a virtualenv made before a tool was added gets it
# on the next run instead of lacking it forever.
PY_TOOLS_STAMP := $(PY_VENV)/.tools-$(shell printf '%s' '$(PY_TOOLS)' | cksum | cut -d' ' -f1)

TEST_TARGETS += test-py
BENCH_TARGETS += bench-py
DEMO_TARGET := demo-py

.PHONY: py-venv py-wheel test-py bench-py demo-py

## The virtualenv with maturin, pytest, mypy, hypothesis and OpenTelemetry's
## api and sdk (created once,
## topped up when PY_TOOLS changes), and faketime for the test of a server
## whose clock differs from its client's.
py-venv: $(PY_TOOLS_STAMP)

$(PY_TOOLS_STAMP): $(PY_VENV)/.ready
	$(PY) -m pip install -q --disable-pip-version-check $(PY_TOOLS)
	@if ! command -v faketime >/dev/null 2>&1; then \
	  echo "py.mk: installing faketime"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq faketime >/dev/null; \
	fi
	touch $@

$(PY_VENV)/.ready:
	@if ! $(PYTHON3) -c 'import ensurepip, venv' >/dev/null 2>&1; then \
	  echo "py.mk: installing python3-venv"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-venv >/dev/null; \
	fi
	$(PYTHON3) -m venv $(PY_VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(PY_TOOLS)
	touch $@

## Build the wheel (maturin, --release) and install it into the virtualenv.
py-wheel: deps py-venv
	rm -rf $(PY_WHEELS)
	$(PY_VENV)/bin/maturin build --release -m py/Cargo.toml -i $(PY) -o $(PY_WHEELS)
	$(PY) -m pip install -q --disable-pip-version-check --force-reinstall --no-deps $(PY_WHEELS)/telha_jobs-*.whl

## The pytest suite (it also runs mypy.stubtest on the installed wheel and
## mypy --strict on the package); its summary line ends the output.
test-py: py-wheel
	cd py && $(PY) -m pytest -q tests

## Python figures beside the Rust core's, measured in the same run.
bench-py: py-wheel
	$(PY) py/bench/bench.py --ref "$(BENCH_REF)"

## The Python ingestion demo on the embedded default store.
demo-py: py-wheel
	$(PY) py/examples/ingest.py
