"""The main job's run machinery (stages, state, diff, publish). Importing it first picks Arrow's allocator,
before anything loads pyarrow (:mod:`runs.memory`)."""

from runs.memory import prefer_jemalloc

prefer_jemalloc()
