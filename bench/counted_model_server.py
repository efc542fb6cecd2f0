"""The loopback model server, counting its answers into a file (for ``bench.scale``).

``python -m bench.counted_model_server --port P --latency 2 --counts /tmp/x.json
--default-reply '{...}'`` serves like ``python -m evennia_ai.testing.model_server`` and
rewrites ``/tmp/x.json`` every 0.2 s with ``{"answered": n, "time": t}``: the requests
answered so far and the wall-clock time of that count, so a benchmark measures model calls per
second where they are served. Its listening socket keeps a backlog of 1024 connections (the
standard library's 5 drops connections when a hundred calls start at once; the client would
wait a second to retry).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

from evennia_ai.testing import model_server
from evennia_ai.testing.model_server import ModelServer, ReplySpec

BACKLOG = 1024
PERIOD = 0.2


class _BigBacklog(model_server._HTTPServer):
    request_queue_size = BACKLOG


def write_count(server: ModelServer, path: str) -> None:
    """Write the answered count to ``path`` (whole, then renamed)."""
    data = {"answered": sum(server.counts().values()), "time": time.time()}
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.counted_model_server")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--counts", required=True, help="JSON file the count is written to")
    parser.add_argument("--default-reply", default='{"text": "ok"}', help="a JSON reply spec")
    args = parser.parse_args(argv)
    model_server._HTTPServer = _BigBacklog  # the class ModelServer() instantiates
    server = ModelServer(
        port=args.port,
        latency=args.latency,
        default_reply=ReplySpec.from_dict(json.loads(args.default_reply)),
    )
    done = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: done.set())
    server.start()
    try:
        while not done.wait(PERIOD):
            write_count(server, args.counts)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
