"""The test settings on a real PostgreSQL server instead of in-memory SQLite.

Used by ``python tests/support/postgres.py tests`` (``make test`` runs it), which starts a
throwaway server and hands its ``DATABASES`` entry over in ``$EVENNIA_AI_TEST_POSTGRES``.
"""

import json
import os

from evennia_ai_test_settings import *  # noqa: F401,F403

try:
    DATABASES = {"default": json.loads(os.environ["EVENNIA_AI_TEST_POSTGRES"])}
except KeyError:
    raise RuntimeError(
        "evennia_ai_pg_test_settings needs a running server: run the PostgreSQL tests with "
        "'python tests/support/postgres.py tests'"
    ) from None
