"""Tests of ``evennia_ai.memory``: blocks, events, history, compression, long-term memory."""
