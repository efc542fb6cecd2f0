"""In-game commands of evennia-ai: the admin commands (help category ``AI``) and the players'
trade commands (help category ``Trade``).

``AIAdminCmdSet`` holds the admin commands and ``AITradeCmdSet`` the players' ``wares``, ``buy``
and ``sell``; see :mod:`evennia_ai.commands.cmdset` and :mod:`evennia_ai.commands.trade` for
adding them to a game.
"""

from evennia_ai.commands.cmdset import AIAdminCmdSet
from evennia_ai.commands.trade import AITradeCmdSet

__all__ = ["AIAdminCmdSet", "AITradeCmdSet"]
