"""Regenerate docs/commands.md from the admin commands' docstrings (their in-game help).

Usage: .venv/bin/python scripts/gen_command_docs.py
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evennia_ai_test_settings")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import django  # noqa: E402

django.setup()

import evennia  # noqa: E402

evennia._init()

from evennia_ai.commands.cmdset import render_commands_markdown  # noqa: E402

target = ROOT / "docs" / "commands.md"
target.write_text(render_commands_markdown())
print(f"wrote {target}")
