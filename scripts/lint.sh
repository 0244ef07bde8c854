#!/usr/bin/env bash
# Lint for both tiers (`make check`, `make test`): ruff, import-linter's contracts, and mypy --strict over the
# whole package ([tool.mypy] `files`; configuration in pyproject.toml).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
"$BIN/lint-imports" --no-cache || exit 1
"$BIN/ruff" check . || exit 1
"$BIN/mypy" || exit 1
