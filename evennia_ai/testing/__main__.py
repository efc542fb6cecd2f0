"""``python -m evennia_ai.testing``: run the loopback model server (see ``model_server.main``)."""

import sys

from evennia_ai.testing.model_server import main

sys.exit(main())
