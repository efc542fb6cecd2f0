"""The engine of an assistant: events, the ReAct loop, history, traces and confirmations.

Modules are imported by name (``from evennia_ai.engine import events``); this package
re-exports nothing, so importing one pure module never pulls in the Evennia glue of another.
"""
