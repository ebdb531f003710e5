"""Which allocator Arrow's buffers come from during a run.

pyarrow's default pool on Linux is mimalloc, which keeps pages it has freed: a run streams many batches of
the same size, and measured on the 100 000-chunk join (``benchmarks/bench_memory.py``) the process peaked at
403 MB with mimalloc, 461 MB with the system allocator and 318 MB with jemalloc, whose dirty pages decay back
to the OS. A run therefore uses jemalloc when this pyarrow has it, unless ``ARROW_DEFAULT_MEMORY_POOL``
names a pool (the user's choice wins).
"""

from __future__ import annotations

import contextlib
import os

import pyarrow as pa


def lean_arrow_memory() -> str:
    """Switch Arrow to jemalloc (when built in and not overridden); returns the pool now in use."""
    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        with contextlib.suppress(NotImplementedError):  # a pyarrow built without jemalloc keeps its default
            pa.set_memory_pool(pa.jemalloc_memory_pool())
    return str(pa.default_memory_pool().backend_name)
