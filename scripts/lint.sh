#!/usr/bin/env bash
# The formatting and lint checks of `make test`: black and isort configured as Evennia's own
# pyproject.toml (line length 100), ruff, and the type checker mypy over the package (strict for
# llm/, prompt/, tools/base and world/); settings in pyproject.toml. mypy keeps its cache in the venv,
# so a second run checks only what changed (seconds; a fresh venv takes about a minute).
#
# Usage: scripts/lint.sh [VENV]      (`make format` rewrites the files instead)
set -uo pipefail
VENV="${1:-.venv}"
PATHS=(evennia_ai tests bench scripts world_example)
rc=0
"$VENV/bin/black" --check --quiet "${PATHS[@]}" || { echo "black: files need formatting (make format)"; rc=1; }
"$VENV/bin/isort" --check-only --quiet "${PATHS[@]}" || { echo "isort: imports need sorting (make format)"; rc=1; }
"$VENV/bin/ruff" check --quiet "${PATHS[@]}" || { echo "ruff: lint errors above"; rc=1; }
"$VENV/bin/mypy" --cache-dir "$VENV/.mypy_cache" || { echo "mypy: type errors above"; rc=1; }
[ "$rc" -eq 0 ] && echo "lint: black, isort, ruff and mypy pass"
exit "$rc"
