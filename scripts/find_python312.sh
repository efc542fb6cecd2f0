#!/usr/bin/env bash
# Print the path of a working Python 3.12 interpreter, or nothing.
# (pyenv installs a `python3.12` shim that fails unless 3.12 is selected, so try it for real.)
for candidate in python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
    if path=$(command -v "$candidate" 2>/dev/null) && "$path" -c "import sys" >/dev/null 2>&1; then
        echo "$path"
        exit 0
    fi
done
