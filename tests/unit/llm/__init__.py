"""Tests of ``evennia_ai.llm``: the model client, token counts and windows, the JSON protocol."""
