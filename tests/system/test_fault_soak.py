"""Fault soak: 100 ticks with 20 % model faults of every kind (``bench/fault_soak.py`` runs 1,000).

No Script dies, no event is lost, every failure shows in ``npc.ai.status()`` and in the tick
traces, and the fallback model answers when the main model fails. ``SOAK_TICKS`` changes the
number of ticks; ``SOAK_OUT`` names a JSON file the figures are written to (for the bench).
"""

import json
import os
import sys
from pathlib import Path

import pytest
from evennia import create_object
from evennia.utils.test_resources import BaseEvenniaTest

from evennia_ai.typeclasses import AIAssistantCharacter

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.fault_soak import failed_checks, render, run_soak  # noqa: E402

pytestmark = pytest.mark.timeout(int(os.environ.get("SOAK_TICKS", "100")) * 2 + 60)


class TestFaultSoak(BaseEvenniaTest):
    def setUp(self):
        super().setUp()
        self.npc = create_object(AIAssistantCharacter, key="Innkeeper", location=self.room1)
        self.npc.ai.set_persona("A warm innkeeper.")

    def tearDown(self):
        script = self.npc.ai.script
        if script:
            script.delete()
        self.npc.delete()
        super().tearDown()

    def test_soak_with_every_fault_kind(self):
        ticks = int(os.environ.get("SOAK_TICKS", "100"))
        report = run_soak(
            self.npc,
            self.char1,
            ticks=ticks,
            fault_rate=0.2,
            seed=11,
            timeout=0.3,
            hang_seconds=1.0,
        )
        out = os.environ.get("SOAK_OUT")
        if out:
            Path(out).write_text(json.dumps(report, default=str))
        print("\n" + render(report))
        assert failed_checks(report) == []
        assert report["ticks"] >= ticks
        assert report["error_ticks"] > 0 and report["fallback_iterations"] > 0  # faults really hit
