#!/usr/bin/env bash
# Builds the GraphQL playground into internal/playground/dist (committed):
#   bash web/build.sh
# Needs node >= 20 and npm; installs exactly package-lock.json with npm ci.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
node build.mjs
