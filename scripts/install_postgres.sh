#!/usr/bin/env bash
# Install what the PostgreSQL tests and `DEMO_DB=postgres make demo` need: Debian's postgresql
# server binaries (apt, as root or with sudo) and psycopg (pip, into the venv given as $1,
# default .venv). Safe to run twice: whatever is already installed is skipped. No server is
# left running: the tests and the demo start their own (tests/support/postgres.py); the cluster
# that Debian's package creates and starts, if it does, is stopped again.
#
# Usage: scripts/install_postgres.sh [VENV]
set -euo pipefail

VENV="${1:-.venv}"

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    SUDO=""
fi

have_server() {
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
        || { command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; }
}

if have_server; then
    echo "PostgreSQL server binaries already installed"
else
    if [ -z "$SUDO" ] && [ "$(id -u)" -ne 0 ]; then
        echo "Installing PostgreSQL needs root (or sudo): run 'apt-get install postgresql' as root." >&2
        exit 1
    fi
    echo "Installing postgresql with apt-get..."
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends postgresql
    # The package creates a "main" cluster and may start it on port 5432: nothing here uses it.
    if command -v pg_lsclusters >/dev/null 2>&1; then
        pg_lsclusters --no-header 2>/dev/null | while read -r version name _port status _rest; do
            if [ "$status" = "online" ]; then
                $SUDO pg_ctlcluster --skip-systemctl-redirect "$version" "$name" stop || true
            fi
        done
    fi
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "No Python venv at $VENV (pass its path as the first argument)." >&2
    exit 1
fi
if "$VENV/bin/python" -c "import psycopg" >/dev/null 2>&1; then
    echo "psycopg already installed in $VENV"
else
    echo "Installing psycopg into $VENV..."
    "$VENV/bin/python" -m pip install -q "psycopg[binary]"
fi

echo "PostgreSQL test prerequisites ready."
