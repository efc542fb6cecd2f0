"""Tests of ``evennia_ai.tools``: the tool base, world and block tools, rules, approvals, safety."""
