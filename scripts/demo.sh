#!/usr/bin/env bash
# Set up and start the evennia-ai demo game, non-interactively.
#   - creates demo_game/ from Evennia's template plus world_example/ (once)
#   - migrates, creates the superuser `admin`, builds the tavern on the first start
#   - starts the server on 127.0.0.1 and prints how to connect
# DEMO_DB=postgres: the game's database is a PostgreSQL cluster kept in demo_game/server/postgres/
# (created on the first start, started here, stopped by `make stop`; tests/support/postgres.py).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${VENV:-.venv}
EVENNIA="$ROOT/$VENV/bin/evennia"
GAME=${DEMO_GAME_DIR:-demo_game}
# The launcher runs `twistd` from PATH.
export PATH="$ROOT/$VENV/bin:$PATH"

export LITELLM_LOCAL_MODEL_COST_MAP=${LITELLM_LOCAL_MODEL_COST_MAP:-True}
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1
export EVENNIA_SUPERUSER_USERNAME=admin
export EVENNIA_SUPERUSER_EMAIL=admin@localhost

if [ ! -d "$GAME" ]; then
    echo "==> Creating the game directory $GAME/"
    "$EVENNIA" --init "$GAME" >/dev/null
    cp -r world_example/. "$GAME/"
    rm -f "$GAME/README.md"
fi

# The database: SQLite (Evennia's default) or, once chosen, PostgreSQL for good.
PGDIR="$GAME/server/postgres"
if [ "${DEMO_DB:-}" = "postgres" ] || [ -d "$PGDIR" ]; then
    DB=postgres
elif [ -n "${DEMO_DB:-}" ] && [ "$DEMO_DB" != "sqlite" ]; then
    echo "DEMO_DB is 'sqlite' (the default) or 'postgres', not '$DEMO_DB'." >&2
    exit 1
else
    DB=sqlite
fi
if [ "$DB" = "postgres" ]; then
    if [ -f "$GAME/server/evennia.db3" ]; then
        echo "$GAME/ already keeps its world in SQLite: 'make stop', remove $GAME/ and run" \
            "'DEMO_DB=postgres make demo' again to start over on PostgreSQL." >&2
        exit 1
    fi
    NEW_DB=$([ -f "$PGDIR/data/PG_VERSION" ] || echo yes)
    echo "==> Starting PostgreSQL ($PGDIR/)"
    BLOCK=$("$ROOT/$VENV/bin/python" "$ROOT/tests/support/postgres.py" start "$PGDIR") \
        || { echo "PostgreSQL did not start; see $PGDIR/server.log" >&2; exit 1; }
    SECRETS="$GAME/server/conf/secret_settings.py"
    if ! grep -q "^DATABASES = " "$SECRETS" 2>/dev/null; then
        printf '\n# The demo'"'"'s PostgreSQL (DEMO_DB=postgres; make stop stops it).\n%s\n' "$BLOCK" >>"$SECRETS"
    fi
else
    NEW_DB=$([ -f "$GAME/server/evennia.db3" ] || echo yes)
fi

PASSFILE="$GAME/.demo_password"
if [ -n "${DEMO_PASSWORD:-}" ]; then
    PASSWORD=$DEMO_PASSWORD
elif [ -f "$PASSFILE" ]; then
    PASSWORD=$(cat "$PASSFILE")
else
    PASSWORD=$("$ROOT/$VENV/bin/python" -c "import secrets; print(secrets.token_urlsafe(12))")
fi
FIRST_START=""
if [ -n "$NEW_DB" ]; then
    FIRST_START="--first-start"  # its server restarts once after the initial setup
    echo "$PASSWORD" > "$PASSFILE"
    chmod 600 "$PASSFILE"
fi
export EVENNIA_SUPERUSER_PASSWORD=$PASSWORD

cd "$GAME"
echo "==> Migrating the database"
"$EVENNIA" migrate </dev/null >/dev/null
# The log from here on tells this start from earlier ones (wait_for_login.py --since).
LOG=server/logs/server.log
LOG_SINCE=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
echo "==> Starting the server (first start builds the tavern)"
STARTED=$("$EVENNIA" start </dev/null) || { echo "evennia start failed; see $GAME/server/logs/" >&2; exit 1; }
case "$STARTED" in
    # Nothing new will be logged: judge the server by the whole log.
    *"Server is already running"*) LOG_SINCE=0 ;;
esac

# Wait until a player can log in: the port opens before the server is ready, and a new game's
# server restarts once after its initial setup (a login before that restart is lost). The check
# logs in as admin with the password the game was created with.
ADMIN_PASSWORD=$(cat "$ROOT/$PASSFILE" 2>/dev/null || echo "$PASSWORD")
echo "==> Waiting until a player can log in"
EVENNIA_SUPERUSER_PASSWORD=$ADMIN_PASSWORD "$ROOT/$VENV/bin/python" "$ROOT/scripts/wait_for_login.py" \
    --port 4000 --log "$LOG" --since "$LOG_SINCE" --timeout 180 $FIRST_START \
    || { echo "The game does not accept logins; see $GAME/server/logs/" >&2; exit 1; }

MODEL=${EVENNIA_AI_MODEL:-evennia_ai/offline (not a language model; see README)}
cat <<MSG

The evennia-ai demo is running (model: $MODEL; database: $DB).

  telnet 127.0.0.1 4000
  http://127.0.0.1:4001/webclient

  account:  admin
  password: $ADMIN_PASSWORD

Stop it with: make stop$([ "$DB" = postgres ] && echo " (PostgreSQL too)")
MSG
