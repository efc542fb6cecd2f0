"""Thread counts of the native libraries the plugin loads (``EVENNIA_AI_NATIVE_THREADS``).

OpenMP, MKL, OpenBLAS, Rayon (the ``tokenizers`` library), torch and ONNX Runtime each start a
pool of worker threads as wide as the machine, and several of them spin while they wait. In a
game server, whose reactor is one thread, those pools compete with it for the cores: on a busy
two-core host a player's line waited 423 ms (p50) over the model with the defaults and 39 ms with
one thread each (issue 33). The plugin therefore sets every pool to ``EVENNIA_AI_NATIVE_THREADS``
(default 1) itself, as early as it can: at server start (:mod:`evennia_ai.startstop`) and again
when long-term memory opens its embedder.

- Environment variables (``OMP_NUM_THREADS`` and the like, read by each library when it loads)
  are set only where the operator has not set them: an explicit value in the server's
  environment always wins.
- Pools already loaded when the plugin starts (numpy's OpenBLAS is loaded with the plugin's
  modules, before the start hooks run) are narrowed in place through ``threadpoolctl``, except
  those whose variable the operator set.
- ``TOKENIZERS_PARALLELISM`` is set to ``false`` (unless set), so the tokenizer never forks a
  pool of its own.
- torch, when something already loaded it, gets ``set_num_threads`` and (once per process,
  before its first parallel work) ``set_num_interop_threads``.
- ONNX Runtime sessions take their options from :func:`onnx_session_options`: ``N`` intra-op
  threads, one inter-op thread, spinning off.

A setting of 0 leaves the environment and torch alone (the libraries' own defaults); sessions
then use ONNX Runtime's default width, still without spinning.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from threadpoolctl import threadpool_info, threadpool_limits

from evennia_ai import conf
from evennia_ai.utils import LOG_PREFIX

logger = logging.getLogger(LOG_PREFIX)

#: The variables each native library reads for the width of its pool when it loads.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "RAYON_NUM_THREADS",
)
SETTING = "EVENNIA_AI_NATIVE_THREADS"


@dataclass
class Applied:
    """What :func:`apply` did: the count, the variables it set, those the operator had set
    (kept), whether torch was adjusted, and the already loaded pools it narrowed."""

    threads: int
    set_variables: dict[str, str] = field(default_factory=dict)
    kept_variables: dict[str, str] = field(default_factory=dict)
    torch: bool = False
    loaded_pools: list[str] = field(default_factory=list)


_INTEROP_SET = False


def thread_count() -> int:
    """``EVENNIA_AI_NATIVE_THREADS`` (0: leave the libraries' defaults)."""
    return conf.get_int(SETTING)


def apply_environment(threads: int, environ: Any = None) -> Applied:
    """Set each library's thread variable to ``threads`` where it is not set already, and
    ``TOKENIZERS_PARALLELISM=false`` likewise. ``threads`` 0 sets nothing.

    Args:
        threads: The width of every pool.
        environ: The environment to change (default ``os.environ``).
    """
    environ = os.environ if environ is None else environ
    applied = Applied(threads)
    if threads <= 0:
        return applied
    wanted = {name: str(threads) for name in THREAD_VARIABLES}
    wanted["TOKENIZERS_PARALLELISM"] = "false"
    for name, value in wanted.items():
        if environ.get(name):
            applied.kept_variables[name] = environ[name]
        else:
            environ[name] = value
            applied.set_variables[name] = value
    return applied


def apply_torch(threads: int) -> bool:
    """Narrow torch's pools to ``threads`` if torch is loaded (it is never imported here).

    ``torch.set_num_interop_threads`` works once per process and only before torch's first
    parallel work; a refusal is ignored (the intra-op width, which matters, is still set).
    Returns whether torch was adjusted.
    """
    global _INTEROP_SET
    torch = sys.modules.get("torch")
    if torch is None or threads <= 0 or not hasattr(torch, "set_num_threads"):
        return False
    torch.set_num_threads(threads)
    if not _INTEROP_SET:
        _INTEROP_SET = True
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:  # already set, or parallel work already started
            pass
    return True


#: The variables an operator sets for each kind of pool ``threadpoolctl`` knows; a pool whose
#: variable the operator set is left as it is.
_POOL_VARIABLES = {
    "blas": ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"),
    "openmp": ("OMP_NUM_THREADS",),
}


def apply_loaded_pools(threads: int, kept: dict[str, str]) -> list[str]:
    """Narrow the BLAS and OpenMP pools already loaded in the process to ``threads`` (their
    variables are read only at load), except kinds whose variable is in ``kept``. Returns the
    libraries narrowed (``openblas``, ``libgomp``, ...)."""
    if threads <= 0:
        return []
    narrowed: list[str] = []
    for api, variables in _POOL_VARIABLES.items():
        if any(name in kept for name in variables):
            continue
        pools = [info for info in threadpool_info() if info.get("user_api") == api]
        wide = [info for info in pools if info.get("num_threads") != threads]
        if wide:
            threadpool_limits(limits=threads, user_api=api)
            narrowed.extend(str(info.get("internal_api") or info.get("prefix")) for info in wide)
    return narrowed


def apply(threads: int | None = None) -> Applied:
    """Apply ``threads`` (default: the setting) to the environment and a loaded torch.

    Safe to call any number of times; call it as early as possible (variables are read when a
    library loads).
    """
    threads = thread_count() if threads is None else threads
    applied = apply_environment(threads)
    applied.torch = apply_torch(threads)
    applied.loaded_pools = apply_loaded_pools(threads, applied.kept_variables)
    return applied


def describe(applied: Applied) -> str:
    """One line for the server log saying what :func:`apply` did."""
    if applied.threads <= 0:
        return f"{SETTING} is 0: native libraries keep their own thread counts"
    kept = ", ".join(f"{name}={value}" for name, value in sorted(applied.kept_variables.items()))
    line = f"native libraries limited to {applied.threads} thread(s)"
    return f"{line} (kept the server's own {kept})" if kept else line


def onnx_session_options(threads: int | None = None) -> Any:
    """ONNX Runtime session options: ``threads`` intra-op threads (default: the setting; 0
    lets ONNX Runtime choose), one inter-op thread, workers that sleep instead of spinning."""
    import onnxruntime

    threads = thread_count() if threads is None else threads
    options = onnxruntime.SessionOptions()
    if threads > 0:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: its warnings are not the operator's to act on
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return options
