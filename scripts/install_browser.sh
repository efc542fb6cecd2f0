#!/usr/bin/env bash
# Install what the browser tests need: Debian's chromium and chromium-driver (apt) and
# selenium (pip, into the venv given as $1, default .venv). Safe to run twice: whatever is
# already installed is skipped. The tests use the system chromedriver, so nothing is
# downloaded at test time.
#
# Usage: scripts/install_browser.sh [VENV]
set -euo pipefail

VENV="${1:-.venv}"
# shellcheck source=scripts/install_common.sh
source "$(dirname "$0")/install_common.sh"

have_browser() {
    command -v chromedriver >/dev/null 2>&1 \
        && { command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; }
}

if have_browser; then
    echo "chromium and chromedriver already installed: $(command -v chromium || command -v chromium-browser)"
else
    apt_install chromium chromium chromium-driver
fi

pip_install "$VENV" selenium selenium

echo "Browser test prerequisites ready."
