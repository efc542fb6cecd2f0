"""Tests of ``evennia_ai.web``: the staff dashboard and its JSON API (Django's test client)."""
