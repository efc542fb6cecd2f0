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
                           model, persona, goals, projects, memory contents, sleep
``EDIT``      Developer    change what an NPC is told by its operators, may do or may
                           spend: prompts, templates, the registry, contexts, the
                           execution config, the operator prompt, tool lists, tool
                           categories, tool rules and budgets
============  ===========  ===========================================================

The same checks run in game (a command's lock and its switches) and on the web (every page,
form and API endpoint). Django's ``is_staff`` flag alone grants nothing here: give the account
Evennia's ``Builder`` permission (``perm *ann = Builder``).
"""

from __future__ import annotations

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
