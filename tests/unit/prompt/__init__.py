"""Tests of ``evennia_ai.prompt`` (and ``prompt_registry``): components, contexts, assembly, the
registry, what every request carries.
"""
