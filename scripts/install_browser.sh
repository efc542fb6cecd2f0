#!/usr/bin/env bash
# Install what the browser tests need: Debian's chromium and chromium-driver (apt) and
# selenium (pip, into the venv given as $1, default .venv). Safe to run twice: whatever is
# already installed is skipped. The tests use the system chromedriver, so nothing is
# downloaded at test time.
#
# Usage: scripts/install_browser.sh [VENV]
set -euo pipefail

VENV="${1:-.venv}"

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    SUDO=""
fi

have_browser() {
    command -v chromedriver >/dev/null 2>&1 \
        && { command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; }
}

if have_browser; then
    echo "chromium and chromedriver already installed: $(command -v chromium || command -v chromium-browser)"
else
    if [ -z "$SUDO" ] && [ "$(id -u)" -ne 0 ]; then
        echo "Installing chromium needs root (or sudo): run 'apt-get install chromium chromium-driver' as root." >&2
        exit 1
    fi
    echo "Installing chromium and chromium-driver with apt-get..."
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "No Python venv at $VENV (pass its path as the first argument)." >&2
    exit 1
fi
if "$VENV/bin/python" -c "import selenium" >/dev/null 2>&1; then
    echo "selenium already installed in $VENV"
else
    echo "Installing selenium into $VENV..."
    "$VENV/bin/python" -m pip install -q selenium
fi

echo "Browser test prerequisites ready."
