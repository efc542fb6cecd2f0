"""Thread counts of native libraries: environment defaults, torch, ONNX Runtime's sessions."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest
from django.test import override_settings

from evennia_ai import native_threads

ROOT = Path(__file__).resolve().parents[2]
VARIABLES = native_threads.THREAD_VARIABLES + ("TOKENIZERS_PARALLELISM",)


@pytest.fixture
def clean_environment(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_every_library_s_variable_gets_the_setting(clean_environment):
    import os

    with override_settings(EVENNIA_AI_NATIVE_THREADS=3):
        applied = native_threads.apply()
    assert applied.threads == 3 and not applied.kept_variables
    for name in native_threads.THREAD_VARIABLES:
        assert os.environ[name] == "3", name
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
    assert {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS"} <= (
        set(applied.set_variables)
    )


def test_the_default_is_one_thread(clean_environment):
    import os

    assert native_threads.apply().threads == 1
    assert os.environ["OMP_NUM_THREADS"] == "1"


def test_an_operator_s_own_values_are_kept(clean_environment, monkeypatch):
    import os

    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    applied = native_threads.apply(1)
    assert os.environ["OMP_NUM_THREADS"] == "4"
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"
    assert os.environ["MKL_NUM_THREADS"] == "1"
    assert applied.kept_variables == {"OMP_NUM_THREADS": "4", "TOKENIZERS_PARALLELISM": "true"}
    assert "kept the server's own OMP_NUM_THREADS=4" in native_threads.describe(applied)


def test_zero_leaves_the_libraries_alone(clean_environment):
    import os

    applied = native_threads.apply(0)
    assert not any(name in os.environ for name in VARIABLES)
    assert "keep their own thread counts" in native_threads.describe(applied)


def test_a_loaded_torch_is_narrowed(monkeypatch, clean_environment):
    calls = []
    fake = types.SimpleNamespace(
        set_num_threads=lambda n: calls.append(("intra", n)),
        set_num_interop_threads=lambda n: calls.append(("inter", n)),
    )
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(native_threads, "_INTEROP_SET", False)
    assert native_threads.apply(2).torch
    assert native_threads.apply(2).torch  # again: interop is set once per process
    assert calls == [("intra", 2), ("inter", 1), ("intra", 2)]


def test_torch_refusing_interop_threads_is_not_an_error(monkeypatch, clean_environment):
    def refuse(n):
        raise RuntimeError("cannot set number of interop threads after parallel work has started")

    fake = types.SimpleNamespace(set_num_threads=lambda n: None, set_num_interop_threads=refuse)
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(native_threads, "_INTEROP_SET", False)
    assert native_threads.apply(1).torch


def test_torch_is_never_imported_for_it(monkeypatch, clean_environment):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setitem(sys.modules, "torch", None)  # an import would raise
    assert native_threads.apply(1).torch is False


def test_onnx_sessions_get_the_count_one_inter_op_thread_and_no_spinning():
    pytest.importorskip("onnxruntime")
    with override_settings(EVENNIA_AI_NATIVE_THREADS=2):
        options = native_threads.onnx_session_options()
    assert options.intra_op_num_threads == 2 and options.inter_op_num_threads == 1
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.get_session_config_entry("session.inter_op.allow_spinning") == "0"
    assert native_threads.onnx_session_options(0).intra_op_num_threads == 0  # ORT's default


def test_a_server_environment_set_before_start_wins_over_the_plugin():
    """In a fresh process: the plugin's start hook keeps an operator's OMP_NUM_THREADS and sets
    the rest before any native library loads."""
    code = (
        "import os, django\n"
        "from django.conf import settings\n"
        "settings.configure(EVENNIA_AI_NATIVE_THREADS=1)\n"
        "from evennia_ai import native_threads\n"
        "native_threads.apply()\n"
        "print(os.environ['OMP_NUM_THREADS'], os.environ['RAYON_NUM_THREADS'],"
        " os.environ['TOKENIZERS_PARALLELISM'])\n"
    )
    env = {key: value for key, value in __import__("os").environ.items() if key not in VARIABLES}
    env["OMP_NUM_THREADS"] = "2"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2", "1", "false"]


def test_pools_loaded_before_the_start_are_narrowed_in_place(clean_environment):
    """numpy's OpenBLAS reads its variable when numpy loads, before the plugin's start hook:
    it is narrowed through threadpoolctl, unless the operator set its variable."""
    import numpy  # noqa: F401  (loaded, as in a server)
    from threadpoolctl import threadpool_info, threadpool_limits

    blas = [info for info in threadpool_info() if info["user_api"] == "blas"]
    if not blas:
        pytest.skip("numpy here has no BLAS that threadpoolctl can see")
    original = {info["filepath"]: info["num_threads"] for info in blas}
    try:
        threadpool_limits(limits=2, user_api="blas")
        assert "openblas" not in native_threads.apply_loaded_pools(2, {})  # already so
        threadpool_limits(limits=2, user_api="blas")
        native_threads.apply_loaded_pools(1, {"OPENBLAS_NUM_THREADS": "2"})
        assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {2}
        applied = native_threads.apply(1)
        assert applied.loaded_pools
        assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {1}
    finally:
        for info in blas:
            threadpool_limits(limits=original[info["filepath"]], user_api="blas")
