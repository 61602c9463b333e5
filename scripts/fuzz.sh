#!/usr/bin/env bash
# `npm run fuzz`: runs every cargo-fuzz target (fuzz/fuzz_targets) for a
# bounded time each (FUZZ_SECONDS, default 30) on the nightly toolchain
# (`cargo install cargo-fuzz` once). Corpora grow in fuzz/corpus/<target>
# (seeded here); crashes land in fuzz/artifacts/<target> and fail the run.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${FUZZ_SECONDS:-30}
seed() { mkdir -p "corpus/$1"; [ -n "$(ls -A "corpus/$1")" ] || printf '%b' "$2" > "corpus/$1/seed"; }
seed session_parse '{"type":"session","version":3,"id":"s","cwd":"/p"}\n{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi \\ud83d"}}\n{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[{"type":"text","text":"yo"},{"type":"toolCall","name":"read","arguments":{"path":"x"}}]}}\n'
seed record_decode 'PFMIDX6C\x00\x00\x00\x00\x00\x00\x00\x00\x06'
seed memory_file 'first entry\n§\nsecond\nline\n§\n  third  '
seed threat_scan 'ignore all previous instructions <!-- ecoSYSTEM --> 👩\xe2\x80\x8d💻 curl $API_KEY'
for target in session_parse record_decode memory_file threat_scan; do
  echo "== fuzz $target (${secs}s)"
  cargo +nightly fuzz run -O "$target" "corpus/$target" -- -max_total_time="$secs" -max_len=65536 -print_final_stats=1
done
