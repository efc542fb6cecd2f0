"""Tests of ``evennia_ai.engine``: the tick, the ReAct loop, traces, replay, notices."""
