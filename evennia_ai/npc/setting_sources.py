"""Where each setting an NPC uses comes from: its own value, the environment, the settings file
or the default.

``aistatus <npc>`` shows these, so an operator can tell why an NPC uses the model or endpoint it
does. The environment is the server process's own: a changed ``EVENNIA_AI_*`` variable applies
only after ``evennia reboot`` (``evennia reload`` keeps the old environment).

Example:
    for origin in setting_sources(npc):
        print(origin.label, origin.value, origin.source, origin.name)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evennia_ai import conf
from evennia_ai.formatting import count
from evennia_ai.formatting import money as format_money
from evennia_ai.llm.client import model_settings
from evennia_ai.llm.models import OWN_MODEL, choose_model
from evennia_ai.memory import longterm
from evennia_ai.npc import spending
from evennia_ai.npc.spending import FROM_NPC

MODEL_SETTINGS = "EVENNIA_AI_MODEL_SETTINGS"


@dataclass(frozen=True)
class SettingOrigin:
    """One value an NPC uses and where it comes from.

    Attributes:
        label: What the value is (``model``, ``api base``, ...).
        value: The value in use (a secret is shown only as set or not set; None: no limit).
        source: ``this NPC`` (:data:`~evennia_ai.npc.spending.FROM_NPC`), or one of
            :func:`evennia_ai.conf.lookup`'s: ``environment``, ``settings file``, ``default``.
        name: What sets it: a setting's name, or the command that sets the NPC's own value.
    """

    label: str
    value: Any
    source: str
    name: str

    @property
    def from_environment(self) -> bool:
        return self.source == conf.FROM_ENVIRONMENT


def model_origin(npc=None) -> SettingOrigin:
    """The NPC's model: its own (``ainpc/model``) or the server default (``npc`` None: the
    server default)."""
    choice = choose_model(npc.ai.model if npc is not None else "")
    if choice.source == OWN_MODEL:
        return SettingOrigin("model", choice.name, FROM_NPC, "ainpc/model")
    return SettingOrigin("model", choice.name, choice.source, "EVENNIA_AI_MODEL")


def per_model_origin(label: str, model: str, key: str, setting: str) -> SettingOrigin:
    """``key`` of ``model`` as the client resolves it: the model's own entry in
    ``EVENNIA_AI_MODEL_SETTINGS``, else ``setting``."""
    own = model_settings(model).get(key)
    if own:
        source = conf.lookup(MODEL_SETTINGS)[1]
        return SettingOrigin(label, own, source, f"{MODEL_SETTINGS}[{model!r}]")
    value, source = conf.lookup(setting)
    return SettingOrigin(label, value, source, setting)


def memory_origin() -> SettingOrigin:
    """The long-term memory's search mode and the configuration it was built from."""
    status = longterm.status()
    custom, source = conf.lookup("EVENNIA_AI_MEM0_CONFIG")
    built = "a custom mem0 configuration" if custom else "the embedded default"
    value = f"{status['mode']} search ({status['state']}), {built}"
    return SettingOrigin("memory", value, source, "EVENNIA_AI_MEM0_CONFIG")


def budget_origins(npc) -> list[SettingOrigin]:
    """The NPC's daily limits in force, per NPC and for the server."""
    labels = {
        "npc_token_limit": "tokens a day (this NPC)",
        "npc_cost_limit": "cost a day (this NPC)",
        "server_token_limit": "tokens a day (server)",
        "server_cost_limit": "cost a day (server)",
    }
    origins = spending.limit_origins(npc)
    return [
        SettingOrigin(label, origins[key][0], origins[key][1], origins[key][2])
        for key, label in labels.items()
    ]


def setting_sources(npc) -> list[SettingOrigin]:
    """Model, api base, api key (set or not), memory and budgets of ``npc``, with sources."""
    model = model_origin(npc)
    origins = [model]
    if model.value != conf.OFFLINE_MODEL:
        key = per_model_origin("api key", model.value, "api_key", "EVENNIA_AI_API_KEY")
        origins += [
            per_model_origin("api base", model.value, "api_base", "EVENNIA_AI_API_BASE"),
            SettingOrigin(key.label, "set" if key.value else "not set", key.source, key.name),
        ]
    return origins + [memory_origin()] + budget_origins(npc)


# -- in words (the same in game and on the dashboard) ----------------------------------------------
REBOOT_NOTE = "a change applies after evennia reboot, not reload"
# The daily limit settings, and whether each is money (cost) rather than tokens.
MONEY_LIMITS = {name: kind is float for name, _, kind in spending.LIMITS.values()}


def limit_text(value, money: bool = False) -> str:
    """A daily limit as shown: ``20,000``, ``$0.50``, or ``none`` when there is none."""
    if value is None:
        return "none"
    return format_money(value) if money else count(value)


def origin_value(origin: SettingOrigin) -> str:
    """The value of ``origin`` as shown (plain text): limits as numbers or money, ``none`` when
    unset."""
    if origin.name in MONEY_LIMITS:
        return limit_text(origin.value, money=MONEY_LIMITS[origin.name])
    return str(origin.value) if origin.value not in (None, "") else "none"


def origin_text(origin: SettingOrigin) -> str:
    """Where ``origin`` comes from, e.g. ``environment (EVENNIA_AI_MODEL; a change ...)``."""
    if origin.source == FROM_NPC and origin.name in conf.SETTINGS:
        return f"this NPC's own budget (tighter than {origin.name})"
    if origin.source == FROM_NPC:
        return f"this NPC's own (set with {origin.name})"
    note = f"; {REBOOT_NOTE}" if origin.from_environment else ""
    return f"{origin.source} ({origin.name}{note})"
