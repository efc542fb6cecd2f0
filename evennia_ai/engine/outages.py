"""Model endpoints that stop answering: seen by staff, waited out, and healed.

An *endpoint* is where a model call goes: the model name and the ``api_base`` the call is sent
to, resolved as the client resolves them (:func:`endpoint_of`). Every NPC using it shares its
health. The :class:`HealthBoard` (one per process, :data:`BOARD`) counts, per endpoint, the
model calls that failed in a row **for want of an answer** (:data:`OUTAGE_KINDS`: connection
refused or reset, DNS, timeouts, 5xx, and a rate limit still refusing after the client's
retries). A refused request (400, a request over the window, bad credentials, a contract
problem) or a malformed or empty answer says the server is there: it never counts, and it
does not end a run of failures either.

- After ``EVENNIA_AI_OUTAGE_AFTER_FAILURES`` such failures in a row the endpoint is
  **unreachable** since the first of them: online staff and the log are told once
  (:func:`evennia_ai.engine.notices.announce_outage`), and every NPC using it says so in its
  status (``model unreachable since 10:42 UTC``).
- While it is unreachable its NPCs do not all keep calling it: a tick may call it when
  ``EVENNIA_AI_OUTAGE_PROBE_SECONDS`` have passed since the last tick let through (the
  *probe*, :meth:`HealthBoard.admits`); the other ticks put their lines back without counting
  a failed attempt (:func:`evennia_ai.memory.events.hold_back`) and wait.
- The first call that answers ends the run: staff and the log are told the endpoint answers
  again (when it was unreachable), and the NPCs that put lines back are woken to answer them
  (those not older than ``EVENNIA_AI_OUTAGE_REPLAY_SECONDS`` whose speaker is still there; the
  agenda gives up the rest, :func:`evennia_ai.memory.events.give_up_stale`).

The board is fed on the reactor thread only, by the tick when it ends
(:meth:`HealthBoard.observe`, from its usage records, whatever the transport: both return an
``LLMResult`` with an ``error_kind``). A success while no endpoint is failing costs one test of
an empty dict. It lives in process memory: an outage is about the last minutes. A reload
forgets it (the first calls after it find out again; a notice of its end may then never come,
the log says the model answers again), while the lines held back stay in the NPCs' queues
(Attributes), with their ``deferred`` counts, and are answered or given up as above.

Example::

    BOARD.observe(usage.records, npc=npc, script=script)   # at the end of a tick
    health = BOARD.unreachable(npc.ai.model)                 # None while it answers
    if health:
        print(health.describe())          # 'model unreachable since 10:42 UTC'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

from evennia.utils import logger

from evennia_ai import conf
from evennia_ai.engine import notices
from evennia_ai.llm.client import get_client
from evennia_ai.llm.models import resolve_model
from evennia_ai.llm.usage import UsageRecord
from evennia_ai.utils import LOG_PREFIX

#: ``LLMResult.error_kind`` values that mean the endpoint did not answer at all. A rate limit
#: counts: the client already waited and retried, and an endpoint that keeps refusing every
#: NPC's calls answers nobody. Not counted: ``bad_request`` (400, a request it refused),
#: ``context_overflow``, ``auth`` (credentials: staff must fix them, the server is there),
#: ``malformed`` and ``empty`` (it answered, badly), ``unknown``.
OUTAGE_KINDS = frozenset({"connection", "timeout", "server", "rate_limit"})


@dataclass(frozen=True)
class Endpoint:
    """Where a model call goes, as the client resolves it.

    Attributes:
        model: The model name (``openai/test-model``).
        api_base: The server's base URL, "" for the provider's own.
    """

    model: str
    api_base: str = ""

    def __str__(self) -> str:
        return f"{self.model} at {self.api_base}" if self.api_base else self.model


def endpoint_of(model: str | None) -> Endpoint:
    """The endpoint a call with ``model`` goes to: the model (None: the server default) and
    its ``api_base`` (its own in ``EVENNIA_AI_MODEL_SETTINGS``, the client's, or
    ``EVENNIA_AI_API_BASE``), as the client picks it (:meth:`UnifiedLLMClient.base_for`)."""
    name = resolve_model(model)
    return Endpoint(name, str(get_client().base_for(name) or "").rstrip("/"))


def clock_text(moment: float) -> str:
    """``time.time()`` seconds as ``10:42 UTC``."""
    return datetime.fromtimestamp(moment, timezone.utc).strftime("%H:%M UTC")


@dataclass
class EndpointHealth:
    """The run of failures of one endpoint (kept while it lasts).

    Attributes:
        endpoint: The endpoint.
        failures: Calls failed in a row for want of an answer.
        failing_since: When the first of them failed (``time.time()``).
        last_error: What the last one said (the llm layer's words).
        unreachable_since: ``failing_since`` once the run reached
            ``EVENNIA_AI_OUTAGE_AFTER_FAILURES`` (the outage), else None.
        last_probe: When a tick was last let through to call it during the outage
            (``time.monotonic()``).
        npcs: Names of the NPCs whose calls failed or who waited during the run.
        waiting: The Scripts of the NPCs that put lines back, by id: woken when it answers.
    """

    endpoint: Endpoint
    failures: int = 0
    failing_since: float = field(default_factory=time.time)
    last_error: str = ""
    unreachable_since: float | None = None
    last_probe: float = 0.0
    npcs: set[str] = field(default_factory=set)
    waiting: dict[int, Any] = field(default_factory=dict)

    @property
    def unreachable(self) -> bool:
        """Whether the run is an outage (the NPCs using it say so, and wait)."""
        return self.unreachable_since is not None

    def describe(self) -> str:
        """``model unreachable since 10:42 UTC`` (the status of every NPC using it)."""
        return f"model unreachable since {clock_text(self.unreachable_since or self.failing_since)}"


class HealthBoard:
    """The health of every endpoint that is failing now (reactor thread only).

    Endpoints that answer are not kept: :attr:`failing` is empty while all is well, which is
    what makes a success cost next to nothing.
    """

    def __init__(self) -> None:
        self.failing: dict[Endpoint, EndpointHealth] = {}

    # -- what the ticks feed -------------------------------------------------------------------
    def observe(self, records: Iterable[UsageRecord], npc=None, script=None) -> None:
        """Take the outcome of a tick's model calls (its usage records, in order).

        Args:
            records: The tick's calls (each with ``model``, ``error``, ``error_kind``).
            npc: The tick's NPC (named in the notices).
            script: The NPC's Script: woken when an endpoint its calls failed on answers.
        """
        answered: set[str] = set()  # each model's endpoint is resolved once per tick
        for record in records:
            if record.error is None:
                if self.failing and record.model and record.model not in answered:
                    answered.add(record.model)
                    self.succeeded(record.model)
            elif record.error_kind in OUTAGE_KINDS and record.model:
                answered.discard(record.model)
                self.failed(record.model, record.error, npc, script)

    def failed(self, model: str, error: str, npc=None, script=None) -> EndpointHealth:
        """Count one call to ``model``'s endpoint that got no answer; announce an outage
        when the run reaches ``EVENNIA_AI_OUTAGE_AFTER_FAILURES``."""
        endpoint = endpoint_of(model)
        health = self.failing.get(endpoint)
        if health is None:
            health = self.failing[endpoint] = EndpointHealth(endpoint)
        health.failures += 1
        health.last_error = str(error or "")
        self._note(health, npc, script)
        if not health.unreachable and health.failures >= conf.get_int(
            "EVENNIA_AI_OUTAGE_AFTER_FAILURES"
        ):
            health.unreachable_since = health.failing_since
            health.last_probe = time.monotonic()
            logger.log_warn(
                f"{LOG_PREFIX}: model endpoint {endpoint} is unreachable since "
                f"{clock_text(health.failing_since)} ({health.failures} calls failed in a row; "
                f"last: {health.last_error}); its NPCs wait for it"
            )
            notices.announce_outage(str(endpoint), health.describe(), sorted(health.npcs))
        return health

    def succeeded(self, model: str) -> EndpointHealth | None:
        """A call to ``model``'s endpoint answered: its run of failures ends. Returns the run
        that ended (None when it was not failing)."""
        health = self.failing.pop(endpoint_of(model), None)
        if health is None:
            return None
        if health.unreachable:
            since = clock_text(health.unreachable_since or health.failing_since)
            logger.log_info(
                f"{LOG_PREFIX}: model endpoint {health.endpoint} answers again "
                f"(unreachable since {since})"
            )
            notices.announce_recovery(str(health.endpoint), since, len(health.waiting))
        for script in health.waiting.values():
            if getattr(script, "pk", None):
                script.trigger_tick()  # answer the lines held back (the agenda drops stale ones)
        return health

    def waits(self, model: str | None, npc=None, script=None) -> None:
        """``npc`` put lines back for ``model``'s endpoint: wake its ``script`` when it answers
        (only while the endpoint is failing)."""
        health = self.failing.get(endpoint_of(model)) if self.failing else None
        if health is not None:
            self._note(health, npc, script)

    @staticmethod
    def _note(health: EndpointHealth, npc, script) -> None:
        if npc is not None:
            health.npcs.add(str(getattr(npc, "key", npc)))
        if script is not None and getattr(script, "id", None) is not None:
            health.waiting[script.id] = script

    # -- what the ticks and the status ask -------------------------------------------------------
    def unreachable(self, model: str | None) -> EndpointHealth | None:
        """The outage of ``model``'s endpoint, or None while it is not unreachable."""
        if not self.failing:
            return None
        health = self.failing.get(endpoint_of(model))
        return health if health is not None and health.unreachable else None

    def admits(self, model: str | None) -> bool:
        """Whether a tick may call ``model`` now: always, unless its endpoint is unreachable;
        then once every ``EVENNIA_AI_OUTAGE_PROBE_SECONDS`` (this call lets the probe
        through, and the next ones wait)."""
        if not self.failing or model == conf.OFFLINE_MODEL:
            return True
        health = self.unreachable(model)
        if health is None:
            return True
        now = time.monotonic()
        if now - health.last_probe < conf.get_float("EVENNIA_AI_OUTAGE_PROBE_SECONDS"):
            return False
        health.last_probe = now
        return True

    def clear(self) -> None:
        """Forget every run of failures (tests)."""
        self.failing.clear()


#: The process's board (the llm client is shared by every NPC the same way).
BOARD = HealthBoard()


def outage_failure(records: Iterable[UsageRecord]) -> bool:
    """Whether a failed tick failed for want of an answer (one of its calls got
    an error of :data:`OUTAGE_KINDS`): its lines wait for the model rather than count a
    failed attempt."""
    return any(r.error is not None and r.error_kind in OUTAGE_KINDS for r in records)
