#!/usr/bin/env bash
# The browser tests (tests/ui/, `make test-ui`) drive Debian's chromium
# through playwright-core (Playwright's own browser download cannot reach
# its host from these machines). Installs it when /usr/bin/chromium is
# missing; quiet when it is there.
set -euo pipefail

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] && exit 0

echo "ensure-chromium: installing chromium"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
[ -x "$CHROMIUM" ] || { echo "ensure-chromium: $CHROMIUM is still missing" >&2; exit 1; }
