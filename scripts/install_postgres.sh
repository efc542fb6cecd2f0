#!/usr/bin/env bash
# Install what the PostgreSQL tests and `DEMO_DB=postgres make demo` need: Debian's postgresql
# server binaries (apt, as root or with sudo), psycopg with its pool and the pgserver wheel (a
# server with pgvector) (pip, into the venv given as $1,
# default .venv). Safe to run twice: whatever is already installed is skipped. No server is
# left running: the tests and the demo start their own (tests/support/postgres.py); the cluster
# that Debian's package creates and starts, if it does, is stopped again.
#
# Usage: scripts/install_postgres.sh [VENV]
set -euo pipefail

VENV="${1:-.venv}"
# shellcheck source=scripts/install_common.sh
source "$(dirname "$0")/install_common.sh"

have_server() {
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
        || { command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; }
}

if have_server; then
    echo "PostgreSQL server binaries already installed"
else
    apt_install PostgreSQL postgresql
    # The package creates a "main" cluster and may start it on port 5432: nothing here uses it.
    if command -v pg_lsclusters >/dev/null 2>&1; then
        pg_lsclusters --no-header 2>/dev/null | while read -r version name _port status _rest; do
            if [ "$status" = "online" ]; then
                as_root pg_ctlcluster --skip-systemctl-redirect "$version" "$name" stop || true
            fi
        done
    fi
fi

pip_install "$VENV" psycopg "psycopg[binary]"
pip_install "$VENV" psycopg_pool "psycopg[pool]"
# Debian's server has no pgvector: the pgserver wheel's has (the long-term memory tests on
# PostgreSQL use it; tests/support/postgres.py picks the server with the extensions asked for).
pip_install "$VENV" pgserver pgserver || echo "pgserver unavailable: the pgvector tests will be skipped"

echo "PostgreSQL test prerequisites ready."
