"""The demo game from world_example/ starts, and `admin` logs in over telnet into the tavern;
then the town around it (issue 36) works as a player meets it: Bram the smith's wares, a
purchase with no model, a dear one waiting for a Builder, his ledger, and Hilda the baker
walking to the market by her routine.

The game's clock starts at 07:50 (the demo's starts at 06:00): Hilda's slot at the market
begins at 08:00, ten real seconds after the start at the demo's ``TIME_FACTOR`` of 60.
"""

import re
import time

import pytest
from support.game_server import GameServer, TelnetClient

pytestmark = [pytest.mark.server, pytest.mark.timeout(240)]

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SETTINGS = "TIME_GAME_EPOCH = 7 * 3600 + 50 * 60\n"


def command(client: TelnetClient, line: str, needle: str, timeout: float = 10) -> str:
    """Send ``line``; what came back until ``needle``, markup stripped."""
    client.send(line)
    return ANSI.sub("", client.read_until(needle, timeout=timeout))


def test_telnet_login_lands_in_the_tavern_and_the_town_trades_and_walks(tmp_path):
    with GameServer(tmp_path, extra_settings=SETTINGS) as server:
        with TelnetClient(server.telnet_port) as client:
            out = client.login("admin", server.password)
            assert "You become" in out
            assert "The Gilded Tankard" in command(client, "look", "Exits")

            # The town: out of the tavern to the square, east to the smithy.
            assert "Market Square" in command(client, "out", "Exits")
            assert "Bram" in command(client, "east", "Exits")
            wares = command(client, "wares", "You have")
            if "You have 50 coins" not in wares:  # the line's end came in a later read
                wares += ANSI.sub("", client.read_until("coins", timeout=5))
            assert "iron lantern" in wares and "12 coins" in wares, wares
            assert "You have 50 coins" in wares, wares
            bought = command(client, "buy lantern", "now")
            assert "You buy 1 iron lantern" in bought and "38 coins" in bought, bought
            dear = command(client, "buy knife", "approval")
            assert "needs an operator's approval" in " ".join(dear.split()), dear
            ledger = command(client, "aigoods/ledger Bram", "lantern")
            assert "iron lantern" in ledger, ledger

            # Hilda leaves the bakery for the market at 08:00 (through its exits).
            command(client, "west", "Exits")
            deadline = time.monotonic() + 90
            seen = ""
            while time.monotonic() < deadline:
                seen = command(client, "look", "Exits")
                if "Hilda" in seen:
                    break
                time.sleep(2)
            assert "Hilda" in seen, seen
