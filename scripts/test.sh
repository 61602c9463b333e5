#!/usr/bin/env bash
# The project's one test command (`npm test`, run by CI after `npm ci`):
#   1. the README's first command, exactly as written there (minus its leading
#      `npm ci`, which CI has just run): the release build and the demo;
#   2. the gates: rustfmt, clippy, the TypeScript of extension/, tests and
#      bench, actionlint over the release workflow, and the committed
#      index.js / index.d.ts equal to what napi writes;
#   3. the Rust unit tests, the addon under Bun, the real-Pi tests under
#      Node 22 (both Pi lines, including the packed package installed with
#      `pi install` and the README's "Install in Pi" block run as written),
#      and the addon/shim tests under the machine's Node (>= 20), whose TAP
#      summary closes the run.
set -euo pipefail
cd "$(dirname "$0")/.."

node22=$(bash scripts/ensure-node.sh 22)
export PI_NODE22="$node22"

first=$(awk '/^```sh$/ { inside = 1; next } inside { print; exit }' README.md | sed 's/[[:space:]]*#.*$//')
case "$first" in
  "npm ci && "*) ;;
  *) echo "README's first command must start with 'npm ci && ' (found: $first)" >&2; exit 1 ;;
esac
echo "== the README's first command, as written: ${first#npm ci && }"
demo_out=$(mktemp)
bash -c "${first#npm ci && }" | tee "$demo_out"
PFM_DEMO_OUTPUT="$demo_out" node --import tsx --test __test__/readme.test.mts

echo "== gates: cargo fmt, clippy, tsc, actionlint, generated bindings"
cargo fmt --check
cargo clippy --all-targets --quiet -- -D warnings
npx tsc -p tsconfig.check.json
npx tsc -p tsconfig.bench.json
"$(bash scripts/ensure-actionlint.sh)" .github/workflows/*.yml
git diff --exit-code --stat -- index.js index.d.ts || {
  echo "index.js / index.d.ts differ from what 'napi build' generates: commit the regenerated files" >&2
  exit 1
}

echo "== cargo test"
cargo test --quiet

bun=node_modules/.bin/bun
if ! "$bun" --version >/dev/null 2>&1; then bun=node_modules/@oven/bun-linux-x64/bin/bun; fi
echo "== bun $("$bun" --version): the addon and shim under Bun"
"$bun" test --timeout 60000 ./__test__/addon.test.mts ./__test__/curated-tools.test.mts

for line in 24 26; do
  other=$(bash scripts/ensure-node.sh "$line")
  echo "== node $("$other" --version): the addon and shim"
  "$other" --import tsx --test __test__/addon.test.mts __test__/curated-tools.test.mts __test__/recall.test.mts
done

echo "== node $("$node22" --version): real Pi loads the extension (0.80.x and 1.x), from the checkout and as installed"
"$node22" --test __test__/e2e/*.test.mjs

echo "== node $(node --version): addon, shim and real-Pi session fixtures"
node --import tsx --test __test__/*.test.mts
