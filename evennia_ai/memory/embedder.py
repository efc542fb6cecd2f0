"""The local sentence embedder: all-MiniLM-L6-v2 on ONNX Runtime, no torch.

The same network and vectors as sentence-transformers gives for this model (so stores embedded
before need no re-embedding): the ``tokenizer.json`` of the weights package read by the
``tokenizers`` library (truncated at 256 tokens, sentence-transformers' ``max_seq_length`` for
the model; never padded for one text), the graph :mod:`evennia_ai.memory.onnx_model` builds
from the package's safetensors, then mean pooling over the attention mask and L2
normalisation, as sentence-transformers' ``Pooling`` and ``Normalize`` modules compute them.
Batches are sorted by length and padded to their longest text, as sentence-transformers does.

The session runs fp32 with every graph optimisation (``ORT_ENABLE_ALL``) on the CPU, with the
thread counts of :mod:`evennia_ai.native_threads` (``EVENNIA_AI_NATIVE_THREADS``, spinning
off). One :class:`OnnxEmbedder` per model file is shared by the process
(:func:`shared_embedder`); it is safe to call from several threads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Any, Sequence

import numpy as np

from evennia_ai import conf, native_threads
from evennia_ai.memory import onnx_model
from evennia_ai.memory.longterm_config import data_dir
from evennia_ai.utils import LOG_PREFIX

logger = logging.getLogger("evennia_ai.memory.longterm")

MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for all-MiniLM-L6-v2 (sentence_bert_config.json);
longer texts are cut there, as sentence-transformers cuts them."""
BATCH_SIZE = 32  # sentence-transformers' default batch of ``encode``
DIMS = 384

_SHARED: dict[str, "OnnxEmbedder"] = {}
_SHARED_LOCK = threading.Lock()


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Sentence vectors from token states: the mean over the tokens the mask keeps (the count
    clamped at 1e-9), each divided by its L2 norm (clamped at 1e-12), as sentence-transformers'
    ``Pooling(mean)`` and ``Normalize`` do.

    Args:
        hidden: float32 [batch, sequence, dims].
        mask: int [batch, sequence], 1 for a real token.

    Returns:
        float32 [batch, dims], unit length.
    """
    weights = mask.astype(np.float32)[..., None]
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime with the ``tokenizers`` library.

    Args:
        model_path: The ``.onnx`` file (:func:`evennia_ai.memory.onnx_model.ensure_model`).
        tokenizer_path: The weights package's ``tokenizer.json``.
        threads: Threads of a run (default: ``EVENNIA_AI_NATIVE_THREADS``).
    """

    def __init__(self, model_path: str, tokenizer_path: str, threads: int | None = None):
        import onnxruntime
        from tokenizers import Tokenizer

        native_threads.apply()  # before the first session: its pools read the environment
        self.model_path = model_path
        options = native_threads.onnx_session_options(threads)
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = onnxruntime.InferenceSession(
            model_path, sess_options=options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(tokenizer_path)
        # The file pads every text to 128 tokens and cuts at 128; sentence-transformers pads a
        # batch to its longest text and cuts at 256.
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer = tokenizer

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        (hidden,) = self.session.run(
            ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask}
        )
        return mean_pool_normalise(hidden, mask)

    def embed(self, text: str) -> np.ndarray:
        """The unit vector of one text (float32, 384 values); no padding."""
        encoding = self.tokenizer.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        mask = np.asarray([encoding.attention_mask], dtype=np.int64)
        return self._run(ids, mask)[0]

    def embed_many(self, texts: Sequence[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """Unit vectors of many texts, in their order (float32 [n, 384]).

        Texts are sorted by length and run in batches of ``batch_size``, each padded to its
        longest text (the pad tokens are masked out of the attention and the mean).
        """
        if not texts:
            return np.zeros((0, DIMS), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        out = np.empty((len(encodings), DIMS), dtype=np.float32)
        for start in range(0, len(order), max(1, batch_size)):
            chunk = order[start : start + max(1, batch_size)]
            width = len(encodings[chunk[0]].ids)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, index in enumerate(chunk):
                tokens = encodings[index].ids
                ids[row, : len(tokens)] = tokens
                mask[row, : len(tokens)] = 1
            out[chunk] = self._run(ids, mask)
        return out


def default_cache_dir() -> str:
    """``EVENNIA_AI_EMBEDDER_DIR``, else ``<data dir>/embedder`` (absolute)."""
    configured = conf.get_str("EVENNIA_AI_EMBEDDER_DIR")
    if configured:
        return os.path.abspath(os.path.expanduser(configured))
    return os.path.join(data_dir(), "embedder")


def shared_embedder(cache_dir: str | None = None, weights_dir: str | None = None) -> OnnxEmbedder:
    """The process's ONNX embedder, its model built first when needed (seconds: never on the
    reactor thread).

    Args:
        cache_dir: Folder of the built model (default :func:`default_cache_dir`).
        weights_dir: The weights package's model folder (default: the installed package's).

    Raises:
        onnx_model.ModelUnavailable: The model cannot be had (the message says why).
    """
    cache_dir = os.path.abspath(cache_dir or default_cache_dir())
    with _SHARED_LOCK:
        embedder = _SHARED.get(cache_dir)
        if embedder is not None:
            return embedder
        try:
            import onnxruntime  # noqa: F401
            import tokenizers  # noqa: F401
        except ImportError as err:
            raise onnx_model.ModelUnavailable(f"{err.name} is not installed") from err
        built = onnx_model.ensure_model(cache_dir, weights_dir)
        if built.built:
            logger.info(
                "%s: built the ONNX embedder in %.1f s: %s",
                LOG_PREFIX,
                built.seconds,
                built.model_path,
            )
        try:
            embedder = OnnxEmbedder(built.model_path, built.tokenizer_path)
        except Exception as err:  # ONNX Runtime refused the file: rebuild it once
            logger.warning(
                "%s: the ONNX embedder did not load (%s); rebuilding it", LOG_PREFIX, err
            )
            with contextlib.suppress(FileNotFoundError):
                os.unlink(built.model_path)
            built = onnx_model.ensure_model(cache_dir, weights_dir)
            embedder = OnnxEmbedder(built.model_path, built.tokenizer_path)
        _SHARED[cache_dir] = embedder
        return embedder


def forget_shared() -> None:
    """Drop the shared embedders (for tests: the next call loads its model again)."""
    with _SHARED_LOCK:
        _SHARED.clear()


def as_lists(vectors: Any) -> list:
    """Vectors as lists of Python floats (what mem0's embedders return)."""
    return np.asarray(vectors, dtype=np.float32).tolist()
