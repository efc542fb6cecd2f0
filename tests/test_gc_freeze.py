"""Startup objects are exempted from full garbage collections (unless the setting says no)."""

import gc

from django.test import override_settings

from evennia_ai.startstop import freeze_startup_objects


def test_freeze_follows_the_setting():
    gc.unfreeze()
    try:
        with override_settings(EVENNIA_AI_GC_FREEZE=False):
            freeze_startup_objects()
            assert gc.get_freeze_count() == 0
        with override_settings(EVENNIA_AI_GC_FREEZE=True):
            freeze_startup_objects()
            assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
