"""Tests of ``evennia_ai.workspace``: goals, projects, journal, session memory."""
