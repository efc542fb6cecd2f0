"""Tests of ``evennia_ai.testing``: the loopback model server."""
