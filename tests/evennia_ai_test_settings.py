"""Django settings for running the evennia-ai test suite outside a game directory.

Named so that it cannot collide with the top-level ``tests`` package that django-sekizai
installs. Evennia's default settings ``chdir`` while they look for a game directory; the
working directory is restored afterwards so pytest's relative paths keep working.
"""

import os
import tempfile

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

_cwd = os.getcwd()
from evennia.settings_default import *  # noqa: E402,F401,F403

os.chdir(_cwd)

_TMP = tempfile.mkdtemp(prefix="evennia_ai_tests_")
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOG_DIR = os.path.join(_TMP, "logs")
os.makedirs(LOG_DIR, exist_ok=True)
SERVER_LOG_FILE = os.path.join(LOG_DIR, "server.log")
PORTAL_LOG_FILE = os.path.join(LOG_DIR, "portal.log")
HTTP_LOG_FILE = os.path.join(LOG_DIR, "http_requests.log")
LOCKWARNING_LOG_FILE = os.path.join(LOG_DIR, "lockwarnings.log")
CACHE_DIR = os.path.join(_TMP, "cache")
# Files the plugin keeps beside the game (keyword index, long-term memory) go here in tests.
EVENNIA_AI_DATA_DIR = os.path.join(_TMP, "ai_data")
