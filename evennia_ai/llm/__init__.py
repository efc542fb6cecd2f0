"""Model access: one client over litellm, the offline model, the JSON tool protocol, tokens.

Modules are imported by name; this package re-exports nothing, so importing a pure module
(:mod:`~evennia_ai.llm.types`, :mod:`~evennia_ai.llm.json_protocol`,
:mod:`~evennia_ai.llm.offline`, :mod:`~evennia_ai.llm.tokens`) never pulls in Twisted::

    from evennia_ai.llm.client import get_client

    d = get_client().complete(messages, tools=schemas, model=npc_model)  # Deferred -> LLMResult

:mod:`~evennia_ai.llm.client` holds the client over litellm, :mod:`~evennia_ai.llm.threads`
the thread pool every network call runs in.
"""
