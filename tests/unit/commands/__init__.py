"""Tests of ``evennia_ai.commands``: the admin commands, their help and their fuzzing."""
