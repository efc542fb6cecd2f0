#!/usr/bin/env bash
# Set up and start the evennia-ai demo game, non-interactively.
#   - creates demo_game/ from Evennia's template plus world_example/ (once)
#   - migrates, creates the superuser `admin`, builds the tavern on the first start
#   - starts the server on 127.0.0.1 and prints how to connect
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

PASSFILE="$GAME/.demo_password"
if [ -n "${DEMO_PASSWORD:-}" ]; then
    PASSWORD=$DEMO_PASSWORD
elif [ -f "$PASSFILE" ]; then
    PASSWORD=$(cat "$PASSFILE")
else
    PASSWORD=$("$ROOT/$VENV/bin/python" -c "import secrets; print(secrets.token_urlsafe(12))")
fi
if [ ! -f "$GAME/server/evennia.db3" ]; then
    echo "$PASSWORD" > "$PASSFILE"
    chmod 600 "$PASSFILE"
fi
export EVENNIA_SUPERUSER_PASSWORD=$PASSWORD

cd "$GAME"
echo "==> Migrating the database"
"$EVENNIA" migrate </dev/null >/dev/null
echo "==> Starting the server (first start builds the tavern)"
"$EVENNIA" start </dev/null >/dev/null || { echo "evennia start failed; see $GAME/server/logs/" >&2; exit 1; }

# Wait until the telnet port answers.
for _ in $(seq 1 60); do
    if (exec 3<>/dev/tcp/127.0.0.1/4000) 2>/dev/null; then break; fi
    sleep 0.5
done
if ! (exec 3<>/dev/tcp/127.0.0.1/4000) 2>/dev/null; then
    echo "The server did not come up; see $GAME/server/logs/" >&2
    exit 1
fi

MODEL=${EVENNIA_AI_MODEL:-evennia_ai/offline (not a language model; see README)}
cat <<MSG

The evennia-ai demo is running (model: $MODEL).

  telnet 127.0.0.1 4000
  http://127.0.0.1:4001/webclient

  account:  admin
  password: $(cat "$ROOT/$PASSFILE" 2>/dev/null || echo "$PASSWORD")

Stop it with: make stop
MSG
