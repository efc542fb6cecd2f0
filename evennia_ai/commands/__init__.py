"""In-game admin commands of evennia-ai (help category ``AI``).

``AIAdminCmdSet`` holds them all; see :mod:`evennia_ai.commands.cmdset` for adding it to a game.
"""

from evennia_ai.commands.cmdset import AIAdminCmdSet

__all__ = ["AIAdminCmdSet"]
