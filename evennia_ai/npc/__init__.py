"""Glue for one assistant: its handler and state, perception, lookup by Tag, daily spending.

Modules are imported by name; this package re-exports nothing.
"""
