"""Test and benchmark helpers for evennia-ai: a scripted loopback model server.

Example:
    from evennia_ai.testing import ModelServer

    with ModelServer() as server:
        server.enqueue({"text": "Hello there"})
        ...  # point litellm at server.url

Names are imported lazily so that ``python -m evennia_ai.testing.model_server`` does not find
its own module already imported (runpy warns about that).
"""

from __future__ import annotations

from typing import Any

from . import model_server

__all__ = ["FAULT_KINDS", "ModelServer", "RecordedRequest", "ReplySpec", "ToolCallSpec"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(model_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
