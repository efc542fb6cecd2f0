#!/usr/bin/env bash
# The test run behind `make test`: the lint checks (scripts/lint.sh), then the whole suite on
# the main venv (Python 3.11, Evennia 5). Beside it, on the second core: when a Python 3.12 venv
# is given, the fast part of the suite on Evennia 6 (no real servers, browsers or local
# embedder; those need the 3.11 venv), then the database tests (the `postgres` marker) on a real
# PostgreSQL server that tests/support/postgres.py starts and removes (skipped, saying why,
# where PostgreSQL cannot be had), then the install test (a wheel into a fresh venv and a game
# from the guide: minutes of its own, so it runs where a core is free) with the stop test
# (`make stop` during a reload of a real game), which balances the two lanes. Without a 3.12
# venv these follow the main run.
# The side runs' output is printed when everything has finished. The main run lists its 25
# slowest tests, so runs of different sessions can be compared.
#
# Usage: scripts/run_tests.sh VENV [VENV312]
set -uo pipefail

VENV="$1"
VENV312="${2:-}"
INSTALL_TEST="tests/system/test_install_wheel.py"
STOP_TEST="tests/system/test_stop_game.py"

postgres_tests() {
    "$VENV/bin/python" "$(dirname "$0")/../tests/support/postgres.py" tests -- -q
}

install_test() {
    "$VENV/bin/python" -m pytest -q "$INSTALL_TEST" "$STOP_TEST"
}

other_pid=""
if [ -n "$VENV312" ]; then
    log="$(mktemp -t evennia_ai_test312.XXXXXX)"
    pglog="$(mktemp -t evennia_ai_testpg.XXXXXX)"
    rcfile="$(mktemp -t evennia_ai_testrc.XXXXXX)"
    (
        "$VENV312/bin/python" -m pytest -q -m "not server and not browser and not embedder" \
            >"$log" 2>&1
        echo $? >"$rcfile"
        postgres_tests >"$pglog" 2>&1
        pg_rc=$?
        install_test >>"$pglog" 2>&1
        install_rc=$?
        [ "$pg_rc" -eq 0 ] && [ "$install_rc" -eq 0 ]
    ) &
    other_pid=$!
fi

bash "$(dirname "$0")/lint.sh" "$VENV"
lint_rc=$?

"$VENV/bin/python" -m pytest --durations=25 --ignore="$INSTALL_TEST" --ignore="$STOP_TEST"
main_rc=$?

other_rc=0
postgres_rc=0
if [ -n "$other_pid" ]; then
    wait "$other_pid"
    postgres_rc=$?
    other_rc="$(cat "$rcfile" 2>/dev/null || echo 1)"
    echo
    echo "== the fast part of the suite on Python 3.12 / Evennia 6 ($VENV312) =="
    if [ "$other_rc" -eq 0 ]; then
        tail -n 3 "$log"
    else
        cat "$log"
    fi
    echo
    echo "== the database tests on PostgreSQL, then the install and stop tests =="
    if [ "$postgres_rc" -eq 0 ]; then
        grep -E "passed|failed|skipped|SKIPPED" "$pglog" | tail -n 4
    else
        cat "$pglog"
    fi
    rm -f "$log" "$pglog" "$rcfile"
else
    echo
    postgres_tests
    postgres_rc=$?
    install_test || postgres_rc=1
fi

[ "$lint_rc" -eq 0 ] && [ "$main_rc" -eq 0 ] && [ "$postgres_rc" -eq 0 ] && [ "$other_rc" -eq 0 ]
