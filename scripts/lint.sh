#!/usr/bin/env bash
# The formatting and lint checks of `make test`: black and isort configured as Evennia's own
# pyproject.toml (line length 100), and ruff; settings in pyproject.toml.
#
# Usage: scripts/lint.sh [VENV]      (`make format` rewrites the files instead)
set -uo pipefail
VENV="${1:-.venv}"
PATHS=(evennia_ai tests bench scripts world_example)
rc=0
"$VENV/bin/black" --check --quiet "${PATHS[@]}" || { echo "black: files need formatting (make format)"; rc=1; }
"$VENV/bin/isort" --check-only --quiet "${PATHS[@]}" || { echo "isort: imports need sorting (make format)"; rc=1; }
"$VENV/bin/ruff" check --quiet "${PATHS[@]}" || { echo "ruff: lint errors above"; rc=1; }
[ "$rc" -eq 0 ] && echo "lint: black, isort and ruff pass"
exit "$rc"
