"""In-game admin commands of evennia-ai (help category ``AI``).

``AIAdminCmdSet`` holds them all; see :mod:`evennia_ai.commands.cmdset` for adding it to a game.
"""


def __getattr__(name):
    if name == "AIAdminCmdSet":
        from evennia_ai.commands.cmdset import AIAdminCmdSet

        return AIAdminCmdSet
    raise AttributeError(name)
