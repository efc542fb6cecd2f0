"""Test and benchmark helpers for evennia-ai: a scripted loopback model server.

Example:
    from evennia_ai.testing.model_server import ModelServer

    with ModelServer() as server:
        server.enqueue({"text": "Hello there"})
        ...  # point litellm at server.url

This package re-exports nothing, so ``python -m evennia_ai.testing.model_server`` does not find
its own module already imported (runpy warns about that).
"""
