"""Token counting (exact, offline, memoised), context windows, limits and token pressure."""

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken
from django.test import override_settings
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from evennia_ai import conf
from evennia_ai.llm import request_gate, tokens
from evennia_ai.llm.tokens import ModelContextLimits, TokenCounter

LITELLM_DIR = tokens.litellm_tokenizer_dir()
TEXTS = [
    "Hello there, innkeeper! What's the stew tonight?",
    "Grüße aus München — ça va? 日本語のテキストも。 🍺🍺",
    "def look(self, ctx, target=None):\n    return ctx.npc.location\n",
    "<|endoftext|> is only text here, <|im_start|> too",
    " leading and trailing spaces   ",
]


@pytest.fixture(autouse=True)
def fresh_caches():
    tokens.clear_caches()
    yield
    tokens.clear_caches()


@pytest.fixture
def no_network(monkeypatch):
    """Any connection attempt fails the test."""
    attempts = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise AssertionError(f"network access attempted: {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", lambda address, *a, **k: refuse(None, address))
    return attempts


def encoding(name):
    tokens.ensure_offline_encodings()
    return tiktoken.get_encoding(name)


# -- offline encodings --------------------------------------------------------------------------
def test_litellm_ships_the_encodings(monkeypatch):
    assert LITELLM_DIR and os.path.isdir(LITELLM_DIR)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", LITELLM_DIR)
    for name in ("cl100k_base", "o200k_base", "o200k_harmony", "p50k_base"):
        assert tokens.encoding_available(name), name
    assert not tokens.encoding_available("r50k_base")  # not shipped
    assert not tokens.encoding_available("gpt2")  # never loaded: it would be downloaded


def test_cache_dir_set_when_unset(monkeypatch):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    assert tokens.ensure_offline_encodings() == LITELLM_DIR
    assert os.environ["TIKTOKEN_CACHE_DIR"] == LITELLM_DIR
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # empty counts as unset
    assert tokens.ensure_offline_encodings() == LITELLM_DIR


def test_fresh_process_counts_offline_without_importing_litellm(tmp_path):
    """First use in a new process: cache dir set, exact count, no litellm import, no sockets."""
    code = (
        "import socket, sys\n"
        "def refuse(*a, **k): raise SystemExit('network access attempted')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from evennia_ai.llm import tokens\n"
        "c = tokens.TokenCounter('openai/gpt-4o-mini')\n"
        "n = c.count_text('Hello there, innkeeper!')\n"
        "import os\n"
        "print(n, c.exact, c.encoding_name, 'litellm' in sys.modules, os.environ['TIKTOKEN_CACHE_DIR'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[3],
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    count, exact, name, litellm_loaded, cache_dir = out.stdout.split()
    assert int(count) == len(encoding("o200k_base").encode("Hello there, innkeeper!"))
    assert (exact, name, litellm_loaded, cache_dir) == ("True", "o200k_base", "False", LITELLM_DIR)


def test_foreign_cache_dir_is_respected_and_never_downloads(monkeypatch, tmp_path, no_network):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    counter = TokenCounter("gpt-4o")
    assert counter.encoding_name is None and not counter.exact
    assert counter.method == tokens.APPROXIMATE
    assert counter.count_text("x" * 10) == 3  # ceil(10 / 4)
    assert no_network == []
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path)


def test_tiktoken_failure_falls_back_to_chars_over_4(monkeypatch):
    def broken(name):
        raise RuntimeError("no tokenizer today")

    monkeypatch.setattr(tiktoken, "get_encoding", broken)
    counter = TokenCounter("gpt-4o-mini")
    assert not counter.exact and counter.encoding_name is None
    for text in TEXTS:
        assert counter.count_text(text) == math.ceil(len(text) / 4)
    assert "chars/4" in repr(counter)


# -- choosing the encoding ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "model, expected, exact",
    [
        ("openai/gpt-4o-mini", "o200k_base", True),
        ("gpt-4o", "o200k_base", True),
        ("gpt-4.1-nano", "o200k_base", True),
        ("o1", "o200k_base", True),
        ("o3-mini", "o200k_base", True),
        ("openai/gpt-5", "o200k_base", True),
        ("openrouter/openai/gpt-5-mini", "o200k_base", True),
        ("azure/gpt-4o", "o200k_base", True),
        ("gpt-4", "cl100k_base", True),
        ("openai/gpt-3.5-turbo", "cl100k_base", True),
        ("text-davinci-003", "p50k_base", True),
        ("ollama/gpt-oss:20b", "o200k_harmony", True),
        ("ollama/llama3", "cl100k_base", False),
        ("anthropic/claude-3-5-sonnet-20240620", "cl100k_base", False),
        ("openai/my-local-model", "cl100k_base", False),
        ("davinci", "cl100k_base", False),  # r50k_base is not shipped: estimate
        (conf.OFFLINE_MODEL, "cl100k_base", False),
        ("", "cl100k_base", False),
        (None, "cl100k_base", False),
    ],
)
def test_encoding_by_model(model, expected, exact):
    counter = TokenCounter(model)
    assert (counter.encoding_name, counter.exact) == (expected, exact)
    assert counter.method == f"{'tiktoken' if exact else 'estimate'}:{expected}"


def test_o200k_prefixes_without_tiktoken_knowing_the_model(monkeypatch):
    def unknown(name):
        raise KeyError(name)

    monkeypatch.setattr(tokens, "encoding_name_for_model", unknown)
    assert tokens.encoding_name_for("openai/gpt-5.5-turbo") == ("o200k_base", True)
    assert tokens.encoding_name_for("gpt-4") == ("cl100k_base", False)


# -- exact counts -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "model, name",
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("text-davinci-003", "p50k_base"),
        ("ollama/llama3", "cl100k_base"),
    ],
)
@pytest.mark.parametrize("text", TEXTS)
def test_counts_equal_tiktoken(model, name, text):
    expected = len(encoding(name).encode(text, disallowed_special=()))
    assert TokenCounter(model).count_text(text) == expected
    assert tokens.count_text(text, model) == expected


def test_count_text_edge_values():
    counter = TokenCounter("gpt-4o")
    assert counter.count_text(None) == 0
    assert counter.count_text("") == 0
    assert counter.count_text(12345) == counter.count_text("12345")


def test_long_text_is_counted_exactly_but_not_cached():
    counter = TokenCounter("gpt-4o")
    text = "The innkeeper polishes a mug. " * 2000
    assert len(text) > tokens.MAX_CACHED_CHARS
    before = tokens.count_cache_info()
    assert counter.count_text(text) == len(encoding("o200k_base").encode(text))
    after = tokens.count_cache_info()
    assert (after.hits, after.misses, after.currsize) == (
        before.hits,
        before.misses,
        before.currsize,
    )


def test_memoisation_hits():
    counter = TokenCounter("gpt-4o-mini")
    start = tokens.count_cache_info()
    assert start.currsize == 0 and start.maxsize == tokens.COUNT_CACHE_SIZE
    for _ in range(5):
        counter.count_text("The stew is rabbit tonight.")
    TokenCounter("openai/gpt-4o").count_text("The stew is rabbit tonight.")  # same encoding
    TokenCounter("gpt-4").count_text("The stew is rabbit tonight.")  # another encoding
    info = tokens.count_cache_info()
    assert (info.misses, info.hits, info.currsize) == (2, 5, 2)


# -- messages, tools, requests ------------------------------------------------------------------
def manual_count(enc, messages):
    total = 3  # reply priming
    for m in messages:
        total += 3 + len(enc.encode(m["role"]))
        if isinstance(m.get("content"), str):
            total += len(enc.encode(m["content"]))
        if m.get("name"):
            total += len(enc.encode(m["name"])) + 1
        for call in m.get("tool_calls") or []:
            args = call["function"]["arguments"]
            if not isinstance(args, str):
                args = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
            total += 3 + len(enc.encode(call["function"]["name"])) + len(enc.encode(args))
        if m.get("tool_call_id"):
            total += len(enc.encode(m["tool_call_id"]))
    return total


CONVERSATION = [
    {"role": "system", "content": "You are Mara, the innkeeper of the Drowsy Dragon."},
    {"role": "user", "name": "Alice", "content": "Alice says: Any rooms free tonight?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "say", "arguments": '{"message": "One, by the hearth."}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "say",
        "content": "You say: One, by the hearth.",
    },
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "emote", "arguments": {"action": "smiles"}},
            }
        ],
    },
]


@pytest.mark.parametrize("model, name", [("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base")])
def test_count_messages_matches_the_cookbook_formula(model, name):
    counter = TokenCounter(model)
    assert counter.count_messages(CONVERSATION) == manual_count(encoding(name), CONVERSATION)
    assert tokens.count_messages(CONVERSATION, model) == counter.count_messages(CONVERSATION)


def test_count_messages_edge_cases():
    counter = TokenCounter("gpt-4o")
    enc = encoding("o200k_base")
    assert counter.count_messages([]) == 0
    assert counter.count_messages(None) == 0
    assert counter.count_messages([{"role": "assistant", "content": None}]) == 3 + 1 + 3
    parts = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look at this"},
                {"type": "image_url", "image_url": {"url": "http://x/y.png"}},
            ],
        }
    ]
    assert counter.count_messages(parts) == (
        3 + 3 + len(enc.encode("user")) + len(enc.encode("look at this")) + tokens.IMAGE_PART_TOKENS
    )

    class PydanticLike:
        def model_dump(self):
            return {"role": "user", "content": "hi"}

    assert counter.count_messages([PydanticLike()]) == counter.count_messages(
        [{"role": "user", "content": "hi"}]
    )
    legacy = {
        "role": "assistant",
        "content": None,
        "function_call": {"name": "say", "arguments": '{"m":1}'},
    }
    assert counter.count_message(legacy) == 3 + 1 + len(enc.encode("say")) + len(
        enc.encode('{"m":1}')
    )


def test_count_tools_is_the_compact_json_as_sent():
    schemas = [
        {
            "type": "function",
            "function": {
                "name": "say",
                "description": "Say something aloud — to the room.",
                "parameters": {
                    "type": "object",
                    "properties": {"message": {"type": "string"}},
                    "required": ["message"],
                },
            },
        }
    ]
    text = json.dumps(schemas, separators=(",", ":"), ensure_ascii=False)
    counter = TokenCounter("gpt-4o")
    assert counter.count_tools(schemas) == len(encoding("o200k_base").encode(text))
    assert counter.count_tools([]) == counter.count_tools(None) == 0
    assert tokens.count_tools(schemas, "gpt-4o") == counter.count_tools(schemas)
    total = counter.count_messages(CONVERSATION) + counter.count_tools(schemas)
    assert counter.count_request(CONVERSATION, schemas) == total
    assert tokens.count_request(CONVERSATION, schemas, "gpt-4o") == total
    assert tokens.count_request(CONVERSATION, None, "gpt-4o") == counter.count_messages(
        CONVERSATION
    )


words = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


@hsettings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["system", "user", "assistant", "tool"]),
            words,
            st.one_of(st.none(), words),
        ),
        max_size=8,
    )
)
def test_message_counts_are_the_sum_of_their_parts(rows):
    counter = TokenCounter("gpt-4o-mini")
    messages = [
        {"role": role, "content": content, **({"name": name} if name else {})}
        for role, content, name in rows
    ]
    expected = 0
    for m in messages:
        expected += 3 + counter.count_text(m["role"]) + counter.count_text(m["content"])
        if m.get("name"):
            expected += counter.count_text(m["name"]) + 1
    assert counter.count_messages(messages) == (expected + 3 if messages else 0)


# -- context windows ----------------------------------------------------------------------------
def test_window_from_settings_first():
    with override_settings(
        EVENNIA_AI_CONTEXT_WINDOWS={"openai/gpt-4o-mini": 32768},
        EVENNIA_AI_MODEL_SETTINGS={
            "openai/gpt-4o-mini": {"context_window": 1000},
            "ollama/mine": {"context_window": 4096},
        },
    ):
        assert tokens.get_context_window("openai/gpt-4o-mini") == 32768
        assert tokens.get_context_window("ollama/mine") == 4096
        assert tokens.get_context_window(conf.OFFLINE_MODEL) == tokens.DEFAULT_CONTEXT_WINDOW


def test_invalid_window_settings_are_skipped(monkeypatch):
    fake = type(sys)("litellm")
    fake.model_cost = {}
    monkeypatch.setitem(sys.modules, "litellm", fake)
    with override_settings(
        EVENNIA_AI_CONTEXT_WINDOWS={"m/a": "lots", "m/b": -5},
        EVENNIA_AI_MODEL_SETTINGS={
            "m/a": {"context_window": True},
            "m/b": {"context_window": "2048"},
        },
    ):
        assert tokens.get_context_window("m/a") == tokens.DEFAULT_CONTEXT_WINDOW
        assert tokens.get_context_window("m/b") == 2048


def test_model_info_is_one_lookup_rule(monkeypatch):
    fake = type(sys)("litellm")
    fake.model_cost = {
        "gpt-x": {"litellm_provider": "openai", "max_input_tokens": 1000},
        "free-x": {"max_tokens": 512},
    }
    monkeypatch.setitem(sys.modules, "litellm", fake)
    assert tokens.model_info("gpt-x")["max_input_tokens"] == 1000
    assert tokens.model_info("openai/gpt-x")["max_input_tokens"] == 1000
    assert tokens.model_info("openrouter/openai/gpt-x")["max_input_tokens"] == 1000
    assert tokens.model_info("ollama/gpt-x") is None  # another provider's entry is not borrowed
    assert tokens.model_info("ollama/free-x") == {"max_tokens": 512}  # it names no provider
    assert tokens.get_context_window("ollama/gpt-x") == tokens.DEFAULT_CONTEXT_WINDOW
    assert tokens.model_info("") is None and tokens.model_info("nobody/none") is None


def test_window_lookup_names_in_the_model_map(monkeypatch):
    fake = type(sys)("litellm")
    fake.model_cost = {
        "gpt-x": {"max_input_tokens": 100000, "max_tokens": 4096},
        "ollama/tiny": {"max_tokens": 2048},
        "sample_spec": {"max_input_tokens": "max input tokens, if the provider specifies it"},
        "bad": {"max_input_tokens": None, "max_tokens": 0},
    }
    monkeypatch.setitem(sys.modules, "litellm", fake)
    assert tokens.get_context_window("openai/gpt-x") == 100000
    assert tokens.get_context_window("openrouter/openai/gpt-x") == 100000
    assert tokens.get_context_window("ollama/tiny") == 2048
    assert tokens.get_context_window("sample_spec") == tokens.DEFAULT_CONTEXT_WINDOW
    assert tokens.get_context_window("bad") == tokens.DEFAULT_CONTEXT_WINDOW
    assert tokens.get_context_window("") == tokens.DEFAULT_CONTEXT_WINDOW
    assert tokens.get_context_window(None) == tokens.DEFAULT_CONTEXT_WINDOW


def test_window_from_the_real_litellm_map(no_network):
    assert os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") == "True"
    assert tokens.get_context_window("openai/gpt-4o-mini") == 128000
    assert tokens.get_context_window("gpt-4o") == 128000
    assert tokens.get_context_window("ollama/llama2") == 4096
    assert tokens.get_context_window("nobody/knows-this-model") == tokens.DEFAULT_CONTEXT_WINDOW
    assert no_network == []


# -- limits and pressure ------------------------------------------------------------------------
def test_model_limits_share_the_window():
    with override_settings(
        EVENNIA_AI_CONTEXT_WINDOWS={"m/big": 128000, "m/small": 2000},
        EVENNIA_AI_RESERVED_RESPONSE_TOKENS=1024,
    ):
        big = tokens.get_model_limits("m/big")
        assert big == ModelContextLimits(
            max_tokens=128000,
            memory_tokens=31744,
            history_tokens=50790,
            reserved_response_tokens=1024,
        )
        assert big.prompt_budget == 128000 - 1024
        small = tokens.get_model_limits("m/small")
        assert small.reserved_response_tokens == 500  # a quarter of the window at most
        assert small.memory_tokens + small.history_tokens < small.prompt_budget
    with override_settings(
        EVENNIA_AI_CONTEXT_WINDOWS={"m/big": 128000}, EVENNIA_AI_RESERVED_RESPONSE_TOKENS=0
    ):
        assert tokens.get_model_limits("m/big").reserved_response_tokens == 0
    with override_settings(
        EVENNIA_AI_CONTEXT_WINDOWS={"m/big": 128000}, EVENNIA_AI_RESERVED_RESPONSE_TOKENS="plenty"
    ):
        assert tokens.get_model_limits("m/big").reserved_response_tokens == 1024


@pytest.mark.parametrize(
    "used, limit, pressure, level, threshold",
    [
        (0, 1000, "normal", "normal", 60),
        (599, 1000, "normal", "normal", 60),
        (600, 1000, "high", "warning", 60),
        (799, 1000, "high", "warning", 60),
        (800, 1000, "critical", "critical", 80),
        (5000, 1000, "critical", "critical", 80),
        (100, 0, "normal", "normal", 60),
        (-5, 1000, "normal", "normal", 60),
    ],
)
def test_pressure_and_advisory(used, limit, pressure, level, threshold):
    assert tokens.token_pressure(used, limit) == pressure
    advice = tokens.advisory(used, limit)
    assert set(advice) == {"level", "message", "threshold"}
    assert (advice["level"], advice["threshold"]) == (level, threshold)
    assert advice["message"]


def test_advisory_messages_follow_the_spec():
    assert tokens.advisory(10, 100)["message"] == "Sufficient context available"
    assert "wrapping up" in tokens.advisory(65, 100)["message"]
    assert "respond immediately" in tokens.advisory(90, 100)["message"]


# -- the one request limit and the one overflow message --------------------------------------
def test_request_limit_is_the_window_minus_what_the_reply_keeps():
    with override_settings(
        EVENNIA_AI_CONTEXT_WINDOWS={"m/big": 128000, "m/small": 2000},
        EVENNIA_AI_RESERVED_RESPONSE_TOKENS=1024,
    ):
        assert tokens.request_limit("m/big") == 128000 - 1024
        assert tokens.request_limit("m/big") == tokens.get_model_limits("m/big").prompt_budget
        assert tokens.request_limit("m/small") == 2000 - 500  # reserved: a quarter at most
        # a call's own max_tokens is kept free instead of the reserved response tokens
        assert tokens.request_limit("m/big", max_tokens=4000) == 128000 - 4000
        assert tokens.request_limit("m/small", max_tokens=1900) == 100
        assert tokens.request_limit("m/small", max_tokens=5000) == 0  # never below 0


@pytest.mark.parametrize("budget, expected", [(None, 126976), (0, 126976), (12000, 12000)])
def test_request_limit_is_capped_by_a_context_token_budget(budget, expected):
    with override_settings(
        EVENNIA_AI_CONTEXT_WINDOWS={"m/big": 128000}, EVENNIA_AI_RESERVED_RESPONSE_TOKENS=1024
    ):
        assert tokens.request_limit("m/big", token_budget=budget) == expected
        assert tokens.request_limit("m/big", token_budget=10**9) == 126976  # never raised


def test_request_limit_of_no_model_is_the_default_models():
    with override_settings(EVENNIA_AI_MODEL="", EVENNIA_AI_RESERVED_RESPONSE_TOKENS=1024):
        assert tokens.request_limit(None) == tokens.request_limit(conf.OFFLINE_MODEL)


def test_overflow_message_names_the_cause_in_words():
    with override_settings(EVENNIA_AI_MODEL="openai/server-default"):
        text = tokens.overflow_message(5000, 3072, "m/small")
        assert text == (
            "the request does not fit the model's context window: it needs 5000 tokens, over "
            "the 3072 a request to m/small may use; it was not sent"
        )
        assert "openai/server-default may use" in tokens.overflow_message(5000, 3072, None)


def test_the_gate_uses_the_one_limit_and_message():
    messages = [{"role": "user", "content": "word " * 5000}]
    with override_settings(
        EVENNIA_AI_CONTEXT_WINDOWS={"m/small": 4096}, EVENNIA_AI_RESERVED_RESPONSE_TOKENS=1024
    ):
        check = request_gate.check_window("m/small", messages, None)
        assert check.limit == tokens.request_limit("m/small") == 3072
        assert not check.fits
        assert check.describe() == tokens.overflow_message(check.prompt_tokens, 3072, "m/small")
        exact = request_gate.check_window("m/small", messages, None, prompt_tokens=3072)
        assert (
            exact.fits
            and not request_gate.check_window("m/small", [], None, prompt_tokens=3073).fits
        )
        own = request_gate.check_window(
            "m/small", messages, None, max_tokens=96, prompt_tokens=4000
        )
        assert own.limit == tokens.request_limit("m/small", max_tokens=96) == 4000 and own.fits


@pytest.mark.parametrize("model, name", [("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base")])
def test_a_plain_message_is_counted_by_the_formula_and_remembered_whole(model, name):
    """The fast path for ``{"role", "content"}`` messages counts what the general path
    counts (the cookbook formula), for empty, long and special-looking texts too."""
    counter = TokenCounter(model)
    enc = encoding(name)
    for content in ("", "hi", "x" * 5000, "<|endoftext|> is text here", "line\n\nline"):
        message = {"role": "user", "content": content}
        expected = 3 + len(enc.encode("user")) + len(enc.encode(content, disallowed_special=()))
        assert counter.count_message(message) == expected
        assert counter.count_message(dict(message, name="")) == expected  # the general path
    tokens.clear_caches()
    counter = TokenCounter(model)
    message = {"role": "system", "content": "You keep the inn."}
    first = counter.count_message(message)
    hits = tokens._plain_message_cached.cache_info().hits
    assert counter.count_message(dict(message)) == first
    assert tokens._plain_message_cached.cache_info().hits == hits + 1
