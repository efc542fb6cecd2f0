"""Tests of ``evennia_ai.npc``: declared state, attribute writes, lookup, spending."""
