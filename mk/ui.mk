# The operator web page (issue #19): server/ui/ (index.html, app.js, app.css,
# favicon.svg, embedded in the `telha` binary with include_str! and served
# by `telha serve --ui`) and its browser tests, tests/ui/.
#
# test-ui seeds stores with the Node addon (node-build), runs the real
# `telha serve --ui` on them ($(CARGO_TARGET_DIR)/release/telha, rebuilt by
# build-cli so the embedded page is the checkout's) and drives Debian's
# chromium (/usr/bin/chromium, installed when missing) with playwright-core
# from npm. It ends with node --test's summary, and writes the screenshots
# docs/ui-overview.png and docs/ui-job.png.

.PHONY: test-ui

test-ui: deps node-build build-cli
	@bash scripts/ensure-chromium.sh
	cd tests/ui && npm ci --no-audit --no-fund
	TELHA_BIN="$(CARGO_TARGET_DIR)/release/telha" node --test tests/ui/

TEST_TARGETS += test-ui
