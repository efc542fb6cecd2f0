"""The request gate: what every request passes before it is sent (its contract, the window).

Pure module (settings read at call time; no Django, Evennia or Twisted). The client calls
:func:`check` for every request and every model of its fallback chain:

- **Contract.** A request made for a known kind of call (``kind=``) must carry what
  :data:`~evennia_ai.llm.contracts.CALL_CONTRACTS` says. A violation is logged and counted; with
  ``EVENNIA_AI_STRICT_CONTRACTS`` (the test suite) it raises
  :class:`~evennia_ai.llm.contracts.ContractViolation`.
- **Window.** The prompt, the tool schemas and the reply's reserved tokens (``max_tokens`` when
  the call sets it, else ``EVENNIA_AI_RESERVED_RESPONSE_TOKENS`` as shared out by
  :func:`~evennia_ai.llm.tokens.get_model_limits`) must fit the model's window. A request that
  does not is never sent: the call ends with ``error_kind="context_overflow"``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from evennia_ai import conf
from evennia_ai.llm import contracts, tokens
from evennia_ai.llm.types import JSONObject

_log = logging.getLogger("evennia_ai")


@dataclass(frozen=True)
class WindowCheck:
    """How a request measures against one model's window.

    Attributes:
        model: The model checked.
        prompt_tokens: Tokens of the messages and tool schemas as sent.
        reserved: Tokens kept free for the reply.
        window: The model's context window.
        limit: The most prompt tokens the request may have
            (:func:`~evennia_ai.llm.tokens.request_limit`).
    """

    model: str
    prompt_tokens: int
    reserved: int
    window: int
    limit: int

    @property
    def fits(self) -> bool:
        return self.prompt_tokens <= self.limit

    def describe(self) -> str:
        return tokens.overflow_message(self.prompt_tokens, self.limit, self.model)


def request_tokens(model: str, messages: list[JSONObject], tools: list[JSONObject] | None) -> int:
    """Tokens of ``messages`` plus ``tools`` as ``model`` would be sent them."""
    counter = tokens.TokenCounter(model)
    return counter.count_messages(messages) + (counter.count_tools(tools) if tools else 0)


def check_window(
    model: str,
    messages: list[JSONObject],
    tools: list[JSONObject] | None,
    *,
    max_tokens: int | None = None,
    prompt_tokens: int | None = None,
) -> WindowCheck:
    """Measure a request against ``model``'s window (``prompt_tokens`` when already counted)."""
    limits = tokens.get_model_limits(model)
    reserved = int(max_tokens) if max_tokens else limits.reserved_response_tokens
    used = prompt_tokens if prompt_tokens is not None else request_tokens(model, messages, tools)
    return WindowCheck(
        model=model,
        prompt_tokens=int(used),
        reserved=reserved,
        window=limits.max_tokens,
        limit=limits.request_limit(max_tokens=max_tokens),
    )


def check_contract(kind: str | None, messages: list[JSONObject]) -> list[str]:
    """Check a request against its kind's contract; count, log and (strict) raise a violation."""
    problems = contracts.contract_problems(kind, messages)
    if problems:
        contracts.record_violation(str(kind), problems)
        text = f"evennia_ai: a {kind} request breaks its contract: {'; '.join(problems)}"
        _log.error(text)
        if conf.get_bool("EVENNIA_AI_STRICT_CONTRACTS"):
            raise contracts.ContractViolation(text)
    return problems
