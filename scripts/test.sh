#!/usr/bin/env bash
# The project's test command (`npm test`, run by CI after `npm ci`), in parts:
#   bash scripts/test.sh [lint|rust|node|bun|pi-e2e|readme|all]...
# No part, or `all`, runs every part: what `npm test` runs. Parts run in this
# order whatever order they are named in:
#   readme  the README's first command, exactly as written there (minus its
#           leading `npm ci`, which CI has just run): the release build and
#           the demo, checked by __test__/readme.test.mts;
#   lint    rustfmt, clippy, the TypeScript of extension/, tests and bench,
#           actionlint over the release workflow, and the committed index.js /
#           index.d.ts equal to what napi writes;
#   rust    the Rust unit tests;
#   bun     the addon and shim under Bun;
#   node    the addon and shim under Node 24 and 26, and (after pi-e2e when
#           both run) every __test__/*.test.mts under the machine's Node
#           (>= 20), whose TAP summary closes the run;
#   pi-e2e  the real-Pi tests under Node 22 (both Pi lines, including the
#           packed package installed with `pi install` and the README's
#           "Install in Pi" block run as written).
# Every part but readme and lint tests the built addon and shim: build first
# (`npm run build`, or `npm run build:debug`). Node 22/24/26 come from
# scripts/ensure-node.sh (PI_NODE22/24/26 when set; Linux x64 fetches them;
# elsewhere the machine's node if it fits), see CONTRIBUTING.md.
set -euo pipefail
cd "$(dirname "$0")/.."

PARTS=(readme lint rust bun node pi-e2e)
usage() { echo "usage: bash scripts/test.sh [lint|rust|node|bun|pi-e2e|readme|all]... (none = all)" >&2; }

# A word list, not an associative array: macOS ships bash 3.2.
wanted=" "
[ $# -eq 0 ] && set -- all
for arg in "$@"; do
  case "$arg" in
    all) wanted=" ${PARTS[*]} " ;;
    readme | lint | rust | bun | node | pi-e2e) wanted="$wanted$arg " ;;
    -h | --help) usage; exit 0 ;;
    *) echo "test.sh: unknown part '$arg'" >&2; usage; exit 2 ;;
  esac
done
want() { case "$wanted" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# Node 22 runs the real Pi (pi-e2e) and the Pi session fixtures (node).
if want node || want pi-e2e; then
  node22=$(bash scripts/ensure-node.sh 22)
  export PI_NODE22="$node22"
fi

if want readme; then
  first=$(awk '/^```sh$/ { inside = 1; next } inside { print; exit }' README.md | sed 's/[[:space:]]*#.*$//')
  case "$first" in
    "npm ci && "*) ;;
    *) echo "README's first command must start with 'npm ci && ' (found: $first)" >&2; exit 1 ;;
  esac
  echo "== the README's first command, as written: ${first#npm ci && }"
  demo_out=$(mktemp)
  bash -c "${first#npm ci && }" | tee "$demo_out"
  PFM_DEMO_OUTPUT="$demo_out" node --import tsx --test __test__/readme.test.mts
  rm -f "$demo_out"
fi

if want lint; then
  echo "== gates: cargo fmt, clippy, fuzz targets, tsc, actionlint, generated bindings"
  cargo fmt --check
  cargo clippy --all-targets --quiet -- -D warnings
  # The fuzz targets compile against the crate's current API (running them, `npm run fuzz`, needs cargo-fuzz).
  cargo +nightly check --quiet --locked --manifest-path fuzz/Cargo.toml --bins
  npx tsc -p tsconfig.check.json
  npx tsc -p tsconfig.bench.json
  "$(bash scripts/ensure-actionlint.sh)" .github/workflows/*.yml
  git diff --exit-code --stat -- index.js index.d.ts || {
    echo "index.js / index.d.ts differ from what 'napi build' generates: commit the regenerated files" >&2
    exit 1
  }
fi

if want rust; then
  echo "== cargo test"
  cargo test --quiet
fi

if want bun; then
  bun=node_modules/.bin/bun
  if ! "$bun" --version >/dev/null 2>&1; then bun=node_modules/@oven/bun-linux-x64/bin/bun; fi
  echo "== bun $("$bun" --version): the addon and shim under Bun"
  "$bun" test --timeout 60000 ./__test__/addon.test.mts ./__test__/curated-tools.test.mts
fi

if want node; then
  for line in 24 26; do
    # Exit 3: no Node of this line on this machine (ensure-node.sh says how to give one); the rest still runs.
    status=0
    other=$(bash scripts/ensure-node.sh "$line") || status=$?
    if [ "$status" -eq 3 ]; then echo "== node $line: skipped (set PI_NODE$line to run it)" >&2; continue; fi
    [ "$status" -eq 0 ] || exit "$status"
    echo "== node $("$other" --version): the addon and shim"
    "$other" --import tsx --test __test__/addon.test.mts __test__/curated-tools.test.mts __test__/recall.test.mts
  done
fi

if want pi-e2e; then
  echo "== node $("$node22" --version): real Pi loads the extension (0.80.x and 1.x), from the checkout and as installed"
  "$node22" --test __test__/e2e/*.test.mjs
fi

if want node; then
  echo "== node $(node --version): addon, shim and real-Pi session fixtures"
  node --import tsx --test __test__/*.test.mts
fi
