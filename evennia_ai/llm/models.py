"""Which model answers: the one rule every caller uses.

Pure module (settings read at call time; no Django, Evennia or Twisted). A model call goes to
the model it names (an NPC's own ``ainpc/model``, or the model a call passes), else to
``EVENNIA_AI_MODEL``, else to the built-in offline model (:data:`evennia_ai.conf.OFFLINE_MODEL`).
An empty name counts as none::

    from evennia_ai.llm.models import resolve_model

    resolve_model(npc_state(npc).model)  # "openai/gpt-4o-mini", the server default, or the offline one

:func:`choose_model` says where the answer came from as well, for status displays.
"""

from __future__ import annotations

from dataclasses import dataclass

from evennia_ai import conf

#: :attr:`ModelChoice.source` when the model named by the NPC or the call answers.
OWN_MODEL = "own"


@dataclass(frozen=True)
class ModelChoice:
    """The model that answers and where the choice came from.

    Attributes:
        name: The model's name, never empty.
        source: :data:`OWN_MODEL` when the name given won; else where ``EVENNIA_AI_MODEL``
            came from (a ``conf.FROM_*`` value), also when it is empty and the offline model
            answers.
    """

    name: str
    source: str


def choose_model(npc_model: str | None = None) -> ModelChoice:
    """The model that answers a call naming ``npc_model``, and where the choice came from.

    Args:
        npc_model: The model the NPC (or the call) names; None or "" for the server default.

    Returns:
        ``npc_model`` when it is given; else ``EVENNIA_AI_MODEL`` when it is set; else
        :data:`evennia_ai.conf.OFFLINE_MODEL`.
    """
    if npc_model:
        return ModelChoice(npc_model, OWN_MODEL)
    value, source = conf.lookup("EVENNIA_AI_MODEL")
    return ModelChoice(value or conf.OFFLINE_MODEL, source)


def resolve_model(npc_model: str | None = None) -> str:
    """The name of the model that answers a call naming ``npc_model`` (see :func:`choose_model`).

    Args:
        npc_model: The model the NPC (or the call) names; None or "" for the server default.

    Returns:
        The model's name, never empty.
    """
    return choose_model(npc_model).name
