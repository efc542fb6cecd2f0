"""The demo game from world_example/ starts, and `admin` logs in over telnet into the tavern."""

import re

import pytest
from support.game_server import GameServer, TelnetClient

pytestmark = [pytest.mark.server, pytest.mark.timeout(240)]

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_telnet_login_as_admin_lands_in_the_tavern(tmp_path):
    with GameServer(tmp_path) as server:
        with TelnetClient(server.telnet_port) as client:
            out = client.login("admin", server.password)
            assert "You become" in out
            client.send("look")
            text = ANSI.sub("", client.read_until("Exits", timeout=10))
            assert "The Gilded Tankard" in text
