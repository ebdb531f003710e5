"""Which allocator Arrow's buffers come from during a run, and how soon it gives freed pages back.

pyarrow's default pool on Linux is mimalloc, which keeps pages it has freed. Two places choose a pool:

- pyarrow's own default (``pa.set_memory_pool``), used by what Python calls directly;
- Arrow's C++ default, used inside the parquet reader and writer, Acero joins and the dataset scanner. It is
  read from ``ARROW_DEFAULT_MEMORY_POOL`` once, when pyarrow is first imported; ``set_memory_pool`` does not
  change it.

Measured on full builds with a no-op index (``benchmarks/README.md``, "Where the peak is"), zan's index-stage
peak at 20 000 / 100 000 chunks was 386 / 495 MB with pyarrow's defaults, 353 / 464 MB with only the Python
pool on jemalloc (what zan did before), and 277 / 352 MB with both on jemalloc and freed pages purged at once
(decay 0), at the same speed. So:

- :func:`prefer_jemalloc` sets ``ARROW_DEFAULT_MEMORY_POOL=jemalloc`` unless the user set it. It must run
  before pyarrow is imported: ``runs/__init__.py`` calls it, and ``zan run``, the DAG tasks and the
  benchmarks import ``runs`` before anything that loads pyarrow;
- :func:`lean_arrow_memory` (at the start of a run or task) also puts pyarrow's own pool on jemalloc and sets
  its decay to 0, so pages freed between batches go back to the OS instead of adding up to the next stage.

A user's ``ARROW_DEFAULT_MEMORY_POOL`` always wins; a pyarrow built without jemalloc keeps its default.
"""

from __future__ import annotations

import contextlib
import os
import sys

POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"


def prefer_jemalloc() -> None:
    """Choose jemalloc for Arrow's C++ default pool, unless the user chose a pool or pyarrow is loaded (then
    it is too late; :func:`lean_arrow_memory` still moves pyarrow's own pool)."""
    if sys.platform.startswith("linux") and "pyarrow" not in sys.modules:
        os.environ.setdefault(POOL_VARIABLE, "jemalloc")


def lean_arrow_memory() -> str:
    """Switch pyarrow's pool to jemalloc with freed pages returned at once (when built in and the user named
    no other pool); returns the pool now in use."""
    import pyarrow as pa

    if os.environ.get(POOL_VARIABLE, "jemalloc") == "jemalloc":
        with contextlib.suppress(NotImplementedError):  # a pyarrow built without jemalloc keeps its default
            pa.set_memory_pool(pa.jemalloc_memory_pool())
            pa.jemalloc_set_decay_ms(0)
    return str(pa.default_memory_pool().backend_name)
