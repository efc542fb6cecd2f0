"""Regenerate docs/configuration.md from evennia_ai.conf.SETTINGS.

Usage: .venv/bin/python scripts/gen_config_docs.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evennia_ai.conf import render_settings_markdown  # noqa: E402

target = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
target.write_text(render_settings_markdown())
print(f"wrote {target}")
