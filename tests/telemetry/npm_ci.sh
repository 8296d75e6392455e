#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the OTLP receiver's npm packages (pinned in package-lock.json
# beside this script) into a build directory, with `npm ci`. Run by ctest as
# the fixture the OTLP tests require; a missing npm or an unreachable
# registry fails it, and so them: nothing is skipped.
#
#   npm_ci.sh <tests/telemetry> <build dir for the modules>
set -euo pipefail
src=$1
dest=$2

if ! command -v npm >/dev/null; then
  echo "npm not found: the OTLP tests decode with OpenTelemetry's npm packages;" \
       "install Node.js with npm (scripts/install-deps)" >&2
  exit 1
fi
mkdir -p "$dest"
# Already installed from this very lock file: nothing to do.
if [ -d "$dest/node_modules" ] && cmp -s "$src/package-lock.json" "$dest/package-lock.json" &&
   cmp -s "$src/package.json" "$dest/package.json"; then
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dest/"
cd "$dest"
# --ignore-scripts: the packages are only read, never built.
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
