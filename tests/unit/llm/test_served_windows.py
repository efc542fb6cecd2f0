"""evennia_ai.llm.served_windows: asking a model's own server for its context window.

The module promises never to raise ("a server that is down or answers nonsense leaves the
window as it was"): it runs at server start, before litellm is imported and its contract
checked, so an exception there would skip the rest of the start-up warm-up.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import override_settings

from evennia_ai.llm import served_windows, tokens


class _Answering:
    """A loopback HTTP server answering every GET with one JSON value."""

    def __init__(self, value):
        body = json.dumps(value).encode("utf-8")

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


# JSON that is valid but not the object a /models or /api/ps answer is: a proxy's list, a
# plain-text status, a number.
NOT_AN_OBJECT = [[{"id": "x", "max_model_len": 4096}], "ok", 7, None]


@pytest.mark.parametrize("answer", NOT_AN_OBJECT)
def test_an_openai_compatible_server_answering_no_object_leaves_the_window_unknown(answer):
    with _Answering(answer) as server:
        assert served_windows.probe_window("openai/x", api_base=f"{server.url}/v1") is None


@pytest.mark.parametrize("answer", NOT_AN_OBJECT)
def test_an_ollama_server_answering_no_object_leaves_the_window_unknown(answer):
    with _Answering(answer) as server:
        assert served_windows.probe_window("ollama/x", api_base=server.url) is None


def test_learning_windows_at_start_survives_such_a_server():
    model = "openai/served-windows-test-model"
    with _Answering(["not", "an", "object"]) as server:
        with override_settings(
            EVENNIA_AI_API_BASE=f"{server.url}/v1", EVENNIA_AI_CONTEXT_WINDOWS={}
        ):
            try:
                assert served_windows.learn_windows([model]) == {}
                assert tokens.window_source(model) == "guess"
            finally:
                tokens.set_served_window(model, None)


def test_a_listed_window_is_still_read():
    answer = {"data": [{"id": "my-model", "max_model_len": 8192}]}
    with _Answering(answer) as server:
        window = served_windows.probe_window("openai/my-model", api_base=f"{server.url}/v1")
    assert window == 8192
