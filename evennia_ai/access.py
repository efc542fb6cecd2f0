"""Who may do what with AI NPCs: one permission story for the game and the website.

Four kinds of action, each needing one of Evennia's permissions (the permission hierarchy
applies: a Developer passes a Builder check; a superuser passes every check; a quelled
account is checked by its character's permissions, as Evennia does):

============  ===========  ===========================================================
level         permission   what it covers
============  ===========  ===========================================================
``VIEW``      Builder      see every AI NPC: status, traces, memory, history, usage,
                           goals and projects (the ``ai*`` commands' reports, the
                           dashboard and its JSON API)
``APPROVE``   Builder      approve or reject an action waiting for a decision
                           (``aiconfirm``, the dashboard's buttons, the API's POSTs)
``OPERATE``   Builder      run NPCs day to day: create, start, stop, pause, resume,
                           persona, goals, projects, memory contents, sleep; the
                           model only among ``EVENNIA_AI_BUILDER_MODELS``
``EDIT``      Developer    change what an NPC is told by its operators, may do or may
                           spend: prompts, templates, the registry, contexts, the
                           execution config, the operator prompt, tool lists, tool
                           categories, tool rules, budgets and any model; and see
                           what only they may change: the operator prompt's text,
                           values of those keys kept aside, secrets in traces
============  ===========  ===========================================================

The same checks run in game (a command's lock and its switches) and on the web (every page,
form and API endpoint). Django's ``is_staff`` flag alone grants nothing here: give the account
Evennia's ``Builder`` permission (``perm *ann = Builder``).
"""

from __future__ import annotations

from evennia_ai import conf

VIEW = "Builder"
APPROVE = "Builder"
OPERATE = "Builder"
EDIT = "Developer"

# Why a level exists, for refusals (``"Only Developers may change an NPC's tool rules."``).
LEVEL_NAMES = {"Builder": "Builders", "Developer": "Developers", "Admin": "Admins"}


def lock(permission: str) -> str:
    """The command lockstring of ``permission`` (``cmd:perm(Builder)``)."""
    return f"cmd:perm({permission})"


def passes(who, permission: str) -> bool:
    """Whether ``who`` passes ``perm(<permission>)`` as Evennia checks it.

    Args:
        who: An in-game caller (character, account or session) or a web request's user (an
            Account, or Django's anonymous user, who passes nothing).
        permission: An Evennia permission (``Builder``, ``Developer``...).
    """
    if who is None or not getattr(who, "is_authenticated", True):
        return False
    locks = getattr(who, "locks", None)
    if locks is None:
        return False
    try:
        return bool(locks.check_lockstring(who, f"dummy:perm({permission})"))
    except Exception:  # a half-built account: no permission rather than a server error
        return False


def refusal(permission: str, action: str) -> str:
    """The message for someone below ``permission`` who tried ``action``."""
    who = LEVEL_NAMES.get(permission, f"accounts with the {permission} permission")
    return f"Only {who} may {action}."


# -- models: what an NPC spends ------------------------------------------------------------------
SERVER_DEFAULT = "default"
"""How ``EVENNIA_AI_BUILDER_MODELS`` names the server's model (an NPC without its own)."""


def model_choice(model: str | None) -> str:
    """``model`` as a choice: its name, or :data:`SERVER_DEFAULT` (empty, ``default``, ``none``)."""
    name = str(model or "").strip()
    return SERVER_DEFAULT if name.lower() in ("", "default", "none") else name


def builder_models() -> list[str]:
    """The models Builders may choose (``EVENNIA_AI_BUILDER_MODELS``), in the order listed.

    A single name counts as a list of one; anything else that is not a list of names is read
    as the default, no models (:mod:`evennia_ai.conf` logs it), so an unreadable setting leaves
    model changes to Developers.
    """
    listed = conf.get_texts("EVENNIA_AI_BUILDER_MODELS")
    names = [model_choice(name) for name in listed if name.strip()]
    return list(dict.fromkeys(names))


def model_refusal(who, model: str | None) -> str:
    """Why ``who`` may not give an NPC ``model`` ("" when they may).

    Developers choose any model; Builders only one of :func:`builder_models` (the model sets
    what an NPC spends, which is the Developers' to decide); below Builder, nothing.
    """
    if passes(who, EDIT):
        return ""
    if not passes(who, OPERATE):
        return refusal(OPERATE, "change an NPC's model")
    listed = builder_models()
    choice = model_choice(model)
    if choice in listed:
        return ""
    shown = "the server's model" if choice == SERVER_DEFAULT else f"'{choice}'"
    if not listed:
        return refusal(
            EDIT,
            f"change an NPC's model (to {shown}): the model sets what it spends, and the "
            "operators list no models for Builders (EVENNIA_AI_BUILDER_MODELS)",
        )
    return refusal(
        EDIT,
        f"give an NPC {shown}: the model sets what it spends. Builders may choose "
        f"{', '.join(listed)} (EVENNIA_AI_BUILDER_MODELS)",
    )
