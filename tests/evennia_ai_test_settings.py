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
# The default command sets of Evennia's game template, as Evennia's own test cases set them
# (``evennia.utils.test_resources.DEFAULT_SETTING_RESETS``). Evennia's account module reads
# CMDSET_ACCOUNT once, at import, before a test case's override applies: left at the default
# ``commands.default_cmdsets...`` (there is no game folder here) every account created failed
# that import and walked the stack for its error message, about 0.1 s a test.
CMDSET_UNLOGGEDIN = "evennia.game_template.commands.default_cmdsets.UnloggedinCmdSet"
CMDSET_SESSION = "evennia.game_template.commands.default_cmdsets.SessionCmdSet"
CMDSET_CHARACTER = "evennia.game_template.commands.default_cmdsets.CharacterCmdSet"
CMDSET_ACCOUNT = "evennia.game_template.commands.default_cmdsets.AccountCmdSet"
CMDSET_PATHS = ["evennia.game_template.commands", "evennia", "evennia.contrib"]
