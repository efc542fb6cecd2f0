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
