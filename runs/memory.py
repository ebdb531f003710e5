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
  its decay to :data:`ARROW_DECAY_MS`, so pages freed between batches go back to the OS within that time
  instead of adding up to the next stage.

Why 100 ms and not 0: at 0 every freed page went back at once, and the next batch faulted it in again: a
streamed read of the 20 000 enriched chunks took 0.14 s against 0.07 s at 100 ms, and a run after a 1 % text
edit (about ten such reads and writes) 9.98 s against 9.53 s (median of six alternations, hash vectors). The
peaks did not move: the full build of the same corpus 801 / 785 MB (sum of RSS, 0 / 100 ms), and
``benchmarks/bench_kazlaw.py --acts 1000 3000 --commits 100`` 669 and 767 MB at 100 ms (1.15×, as at 0).

A user's ``ARROW_DEFAULT_MEMORY_POOL`` always wins; a pyarrow built without jemalloc keeps its default.

The rest of the process's memory comes from glibc's malloc (Python objects, NumPy arrays: a block's vectors,
the store's keys). glibc serves a large request from its own mmap, given back on free, until the first such
block is freed: then it raises that threshold to the block's size (up to 32 MB), and every later block of a
few MB lands in the heap, where one live object above a freed block keeps it. At 146 000 chunks (130 copies of
the real corpus, ``benchmarks/probe_stages.py 130 --shaped --noop-index``) the index stage's heap held 81 MB
of which 44 MB free: the stage peaked at 321 MB against 226 MB at 13 copies. :func:`lean_malloc` fixes the
threshold at :data:`MMAP_THRESHOLD` (which also stops the raising): the same probe gives 28 MB of heap, 12
free, a 298 MB peak. A user's ``MALLOC_MMAP_THRESHOLD_`` (or ``GLIBC_TUNABLES``) wins.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import sys

POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"
ARROW_DECAY_MS = 100  # how long jemalloc keeps a freed page before it goes back to the OS
MMAP_THRESHOLD = 128 * 1024  # glibc's own starting value, kept from rising
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def prefer_jemalloc() -> None:
    """Choose jemalloc for Arrow's C++ default pool, unless the user chose a pool or pyarrow is loaded (then
    it is too late; :func:`lean_arrow_memory` still moves pyarrow's own pool)."""
    if sys.platform.startswith("linux") and "pyarrow" not in sys.modules:
        os.environ.setdefault(POOL_VARIABLE, "jemalloc")


def lean_malloc() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` so freed large blocks go back to the OS; returns
    whether it was set (not on another libc, nor when the user tuned malloc in the environment)."""
    tuned = "MALLOC_MMAP_THRESHOLD_" in os.environ or "malloc" in os.environ.get("GLIBC_TUNABLES", "")
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc" or tuned:
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError):
        return False


def lean_arrow_memory() -> str:
    """Switch pyarrow's pool to jemalloc with freed pages returned within :data:`ARROW_DECAY_MS` (when built in
    and the user named no other pool), and glibc's malloc to giving large blocks back (:func:`lean_malloc`);
    returns the Arrow pool now in use."""
    import pyarrow as pa

    lean_malloc()

    if os.environ.get(POOL_VARIABLE, "jemalloc") == "jemalloc":
        with contextlib.suppress(NotImplementedError):  # a pyarrow built without jemalloc keeps its default
            pa.set_memory_pool(pa.jemalloc_memory_pool())
            pa.jemalloc_set_decay_ms(ARROW_DECAY_MS)
    return str(pa.default_memory_pool().backend_name)
