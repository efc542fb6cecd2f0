"""Server start: startup objects exempted from full garbage collections (unless the setting says
no), and the model stack loaded before players are served."""

import gc

from django.test import override_settings

from evennia_ai.startstop import freeze_startup_objects


def test_freeze_follows_the_setting():
    gc.unfreeze()
    try:
        with override_settings(EVENNIA_AI_GC_FREEZE=False):
            freeze_startup_objects()
            assert gc.get_freeze_count() == 0
        with override_settings(EVENNIA_AI_GC_FREEZE=True, EVENNIA_AI_GC_THAW_INTERVAL=0):
            freeze_startup_objects()
            assert gc.get_freeze_count() > 0
    finally:
        from evennia_ai import startstop

        if startstop.freeze_survivors in gc.callbacks:
            gc.callbacks.remove(startstop.freeze_survivors)
        gc.unfreeze()


def test_survivors_of_a_full_collection_are_frozen_and_thawed():
    from evennia_ai import startstop

    gc.unfreeze()
    gc.collect()
    base = gc.get_freeze_count()  # Python 3.12 counts a few hundred objects here, frozen or not
    try:
        with override_settings(EVENNIA_AI_GC_FREEZE=True, EVENNIA_AI_GC_THAW_INTERVAL=0):
            startstop.keep_frozen()
            startstop.keep_frozen()  # idempotent
            assert gc.callbacks.count(startstop.freeze_survivors) == 1
            kept = [[i] for i in range(1000)]
            gc.collect()
            assert gc.get_freeze_count() >= base + len(kept)
            startstop.thaw_frozen()
            assert gc.get_freeze_count() <= base
        with override_settings(EVENNIA_AI_GC_FREEZE=False):
            gc.unfreeze()  # an automatic collection may have run since, with the setting on
            gc.collect()
            assert gc.get_freeze_count() <= base
    finally:
        gc.callbacks.remove(startstop.freeze_survivors)
        gc.unfreeze()


def test_litellm_is_loaded_while_the_server_starts():
    from unittest import mock

    from evennia_ai import startstop

    with mock.patch.object(startstop, "get_litellm") as load:
        with override_settings(EVENNIA_AI_MODEL="evennia_ai/offline"):
            assert startstop.load_model_stack() == 0.0
            load.assert_not_called()
        with override_settings(EVENNIA_AI_MODEL="openai/test-model"):
            startstop.load_model_stack()
            load.assert_called_once()


def test_switch_interval_follows_the_setting_and_a_bad_value_gives_the_default():
    """1 ms by default; None leaves Python's interval; a bad value is logged, 1 ms used."""
    import sys
    from unittest import mock

    from evennia_ai import conf, startstop

    before = sys.getswitchinterval()
    try:
        assert conf.SETTINGS["EVENNIA_AI_SWITCH_INTERVAL"].default == 0.001
        assert startstop.set_switch_interval() == 0.001
        with override_settings(EVENNIA_AI_SWITCH_INTERVAL=0.002):
            assert startstop.set_switch_interval() == 0.002
        with override_settings(EVENNIA_AI_SWITCH_INTERVAL=None):
            assert startstop.set_switch_interval() == 0.002  # left as it is
        for bad in ("fast", 0, -1, 5):
            conf.forget_unreadable()
            with (
                override_settings(EVENNIA_AI_SWITCH_INTERVAL=bad),
                mock.patch.object(conf._log, "warning") as logged,
            ):
                assert startstop.set_switch_interval() == 0.001  # the default instead
            assert "EVENNIA_AI_SWITCH_INTERVAL" in logged.call_args[0][0]
    finally:
        sys.setswitchinterval(before)


def test_native_thread_counts_are_set_first_at_server_init(monkeypatch):
    """``at_server_init`` limits the native libraries before it loads anything, keeps an
    operator's own variable and says so in the log."""
    from unittest import mock

    from evennia_ai import native_threads, startstop

    for name in native_threads.THREAD_VARIABLES + ("TOKENIZERS_PARALLELISM",):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "2")
    order = []
    monkeypatch.setattr(startstop, "route_plugin_log", lambda: order.append("log"))
    monkeypatch.setattr(startstop, "load_model_stack", lambda: order.append("litellm"))
    with mock.patch.object(startstop.logger, "log_info") as info:
        startstop.at_server_init()
    import os

    assert os.environ["OMP_NUM_THREADS"] == "1" and os.environ["MKL_NUM_THREADS"] == "2"
    assert order == ["log", "litellm"]
    info.assert_called_once_with(
        "evennia_ai: native libraries limited to 1 thread(s) (kept the server's own "
        "MKL_NUM_THREADS=2)"
    )


def test_a_bad_native_thread_setting_does_not_stop_the_server(monkeypatch):
    from unittest import mock

    from evennia_ai import native_threads, startstop

    monkeypatch.setattr(native_threads, "apply", mock.Mock(side_effect=ValueError("broken")))
    with mock.patch.object(startstop.logger, "log_err") as err:
        assert startstop.limit_native_threads() is None
    err.assert_called_once_with("evennia_ai: could not set native libraries' thread counts: broken")


def test_the_frozen_set_is_bounded_so_cycles_that_died_frozen_are_freed(monkeypatch):
    """A tick in flight during a full collection is frozen with the survivors; once it ends,
    its cycles are garbage the collector cannot see while frozen. The frozen set may grow only
    by FROZEN_GROWTH before the survivors are thawed, and the next full collection frees them."""
    import weakref

    from evennia_ai import startstop

    class Node:
        pass

    monkeypatch.setattr(startstop, "FROZEN_GROWTH", 0.001)
    startstop.thaw_frozen()
    gc.collect()
    automatic = gc.isenabled()
    gc.disable()  # only this test's collections: an automatic one would thaw at its own time
    try:
        with override_settings(EVENNIA_AI_GC_FREEZE=True, EVENNIA_AI_GC_THAW_INTERVAL=0):
            startstop.keep_frozen()
            gc.collect()  # survivors frozen; the bound's base is set
            base = startstop._frozen["base"]
            assert base and gc.get_freeze_count() <= base  # frozen objects freed since count down
            nodes = []
            for _ in range(max(2000, base // 100)):
                node = Node()
                node.me = node  # a cycle, as a tick's runner and its helpers are
                nodes.append(node)
            probe = weakref.ref(nodes[0])
            gc.collect()  # alive in flight: frozen with the survivors
            assert gc.get_freeze_count() > base
            del nodes, node
            gc.collect()
            assert probe() is not None  # dead, but frozen: not collected
            assert startstop._frozen["base"] == 0  # past the bound: thawed instead
            gc.collect()
            assert probe() is None  # the next full collection freed them
    finally:
        gc.callbacks.remove(startstop.freeze_survivors)
        gc.unfreeze()
        startstop._frozen["base"] = 0
        if automatic:
            gc.enable()


# -- what the start loads before players are served, and the one line saying what it loaded ------
class FakeReactor:
    """``reactor.callLater`` that records the calls; :meth:`run` runs them in order of delay."""

    def __init__(self):
        self.later = []

    def callLater(self, delay, function, *args):  # noqa: N802 (Twisted's name)
        self.later.append((delay, function, args))

    def run(self):
        for _delay, function, args in sorted(self.later, key=lambda entry: entry[0]):
            function(*args)


def start_server(monkeypatch, **settings):
    """Run ``at_server_start`` with the slow parts recorded instead of done; returns the order
    of what happened, the fake reactor and the log_info mock."""
    from unittest import mock

    from twisted.internet import defer

    from evennia_ai import startstop

    order = []
    fake = FakeReactor()
    monkeypatch.setattr(startstop, "reactor", fake)
    monkeypatch.setattr(startstop, "upgrade_stored_layout", lambda: None)
    monkeypatch.setattr(startstop, "restore_missing_scripts", lambda: 0)
    monkeypatch.setattr(startstop, "npc_models", lambda: ["openai/test-model"])
    monkeypatch.setattr(startstop, "freeze_startup_objects", lambda: None)
    monkeypatch.setattr(
        startstop.tokens, "count_text", lambda text, model=None: order.append("tokenizer") or 1
    )
    monkeypatch.setattr(startstop, "get_prompt_registry", lambda: order.append("prompts"))
    memory = mock.Mock()
    memory.ensure_ready.side_effect = lambda: order.append("memory")
    monkeypatch.setattr(startstop.longterm, "get_memory", lambda: memory)
    monkeypatch.setattr(startstop.longterm, "status", lambda: {"mode": "hybrid", "reason": ""})
    monkeypatch.setattr(
        startstop.longterm,
        "init_in_thread",
        lambda: order.append("memory in a thread") or defer.succeed({"mode": "keyword"}),
    )
    monkeypatch.setattr(
        startstop.threads,
        "run_in_thread",
        lambda function, *args: defer.succeed(order.append("warm-up thread")),
    )
    info = mock.patch.object(startstop.logger, "log_info").start()
    with override_settings(**settings):
        startstop.at_server_start()
        order.append("served")  # Evennia serves commands once the hook returns
        fake.run()
    mock.patch.stopall()
    return order, fake, info


def test_the_tokenizer_prompts_and_memory_load_before_commands_are_served(monkeypatch):
    """The issue's first reply (4.4 s at zero model latency, "pauses, thinking" shown): what it
    waited for is loaded before the hook returns, and the one line comes after the warm-up."""
    order, fake, info = start_server(
        monkeypatch, EVENNIA_AI_MODEL="openai/test-model", EVENNIA_AI_API_BASE=""
    )
    assert order == ["tokenizer", "prompts", "memory", "served", "warm-up thread"]
    assert [delay for delay, _f, _a in fake.later] == [3.0]  # only the servers' part waits
    lines = [call.args[0] for call in info.call_args_list]
    assert lines[-1].startswith("evennia_ai: evennia-ai ") and " loaded: model " in lines[-1]
    assert lines[-1].endswith("memory mode hybrid")


def test_a_memory_delay_still_loads_memory_in_a_thread_after_it(monkeypatch):
    order, fake, info = start_server(monkeypatch, EVENNIA_AI_MEMORY_INIT_DELAY=600)
    assert order == ["tokenizer", "prompts", "served", "warm-up thread", "memory in a thread"]
    assert sorted(delay for delay, _f, _a in fake.later) == [3.0, 600]
    assert info.call_args_list[-1].args[0].endswith("memory mode hybrid")


def test_the_loaded_line_names_model_endpoint_window_and_memory_mode():
    from evennia_ai import startstop

    with override_settings(
        EVENNIA_AI_MODEL="openai/tavern-llm",
        EVENNIA_AI_API_BASE="http://user:secret@127.0.0.1:5100/v1",
        EVENNIA_AI_CONTEXT_WINDOWS={"openai/tavern-llm": 32768},
    ):
        line = startstop.loaded_line("openai/tavern-llm", {"mode": "hybrid", "reason": ""})
    assert line == (
        f"evennia-ai {startstop.plugin_version()} loaded: model openai/tavern-llm, endpoint "
        "http://127.0.0.1:5100/v1, window 32,768 tokens (EVENNIA_AI_CONTEXT_WINDOWS / "
        "EVENNIA_AI_MODEL_SETTINGS), memory mode hybrid"
    )
    assert "secret" not in line and "user" not in line
    with override_settings(EVENNIA_AI_API_BASE=""):
        hosted = startstop.loaded_line(
            "openai/gpt-4o-mini", {"mode": "keyword", "reason": "no embedder installed"}
        )
        offline = startstop.loaded_line("evennia_ai/offline", {"mode": "keyword"})
    assert "endpoint openai's default, window 128,000 tokens (litellm's model map)" in hosted
    assert hosted.endswith("memory mode keyword (no embedder installed)")
    assert "model evennia_ai/offline, endpoint none (built into the plugin)" in offline
