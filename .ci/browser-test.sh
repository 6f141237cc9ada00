#!/usr/bin/env bash
# Installs what the GraphQL playground's real-browser test needs, if missing:
# Debian's chromium (/usr/bin/chromium) and web/node_modules (npm ci, for
# playwright-core). Exits non-zero when it cannot. Afterwards the tests that
# drive a browser through internal/browsertest (internal/playground's, and
# cmd/procsvc's TestPlaygroundInRealBrowser) run instead of skipping:
#   bash .ci/browser-test.sh && go test -run TestBrowser ./internal/playground
# Set BROWSER_TEST_RUN=1 to also run them here.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '==> browser-test: %s\n' "$*"; }
die() { printf 'browser-test: FATAL: %s\n' "$*" >&2; exit 1; }

CHROMIUM_BIN="${CHROMIUM:-/usr/bin/chromium}"
export DEBIAN_FRONTEND=noninteractive

apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* by hand"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "not root and no sudo; install $* by hand"
    sudo="sudo"
  fi
  say "apt-get install $*"
  $sudo apt-get update -qq || die "apt-get update failed"
  $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null || die "apt-get install $* failed"
}

if [ ! -x "$CHROMIUM_BIN" ]; then
  apt_install chromium
fi
[ -x "$CHROMIUM_BIN" ] || die "no chromium at $CHROMIUM_BIN after installing it"
say "$("$CHROMIUM_BIN" --version 2>/dev/null || echo "chromium at $CHROMIUM_BIN")"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm
fi
command -v node >/dev/null 2>&1 || die "node is not installed"
say "node $(node --version), npm $(npm --version 2>/dev/null)"

if [ ! -f web/node_modules/playwright-core/package.json ] ||
  [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  say "npm ci in web/"
  (cd web && npm ci --no-audit --no-fund) || die "npm ci in web/ failed"
fi
(cd web && node -e "require.resolve('playwright-core')") >/dev/null 2>&1 ||
  die "playwright-core is not resolvable from web/ after npm ci"
say "ready: chromium and playwright-core are installed"

if [ "${BROWSER_TEST_RUN:-0}" = 1 ]; then
  say "go test -run TestBrowser ./internal/playground"
  go test -count=1 -v -run TestBrowser ./internal/playground
fi
