#!/usr/bin/env bash
# The project's one test command (`npm test`): builds the addon (debug) and the
# shim, then runs the Rust unit tests, the addon under Bun, the real-Pi
# extension tests under Node 22, and the addon/shim/Pi-fixture tests under the
# machine's Node (>= 20), whose TAP summary closes the run.
set -euo pipefail
cd "$(dirname "$0")/.."

node22=$(bash scripts/ensure-node22.sh)
export PI_NODE22="$node22"

echo "== build (debug addon + TypeScript shim)"
npx napi build --platform
npx tsc -p extension

echo "== cargo test"
cargo test --quiet

bun=node_modules/.bin/bun
if ! "$bun" --version >/dev/null 2>&1; then bun=node_modules/@oven/bun-linux-x64/bin/bun; fi
echo "== bun $("$bun" --version): the addon and shim under Bun"
"$bun" test --timeout 60000 ./__test__/addon.test.mts ./__test__/curated-tools.test.mts

echo "== node $("$node22" --version): real Pi loads the extension (0.80.x and 1.x)"
"$node22" --test __test__/e2e/*.test.mjs

echo "== node $(node --version): addon, shim and real-Pi session fixtures"
node --import tsx --test __test__/*.test.mts
