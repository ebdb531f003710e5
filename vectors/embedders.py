"""Which embedder a command uses: the one a spec names, or the published version's (:mod:`vectors.embed`)."""

from __future__ import annotations

from pathlib import Path

from vectors.embed import Embedder, EmbedderError, EmbedderSpec, HashingEmbedder


def make_embedder(spec: str) -> Embedder:
    """The embedder a spec names (a model loads on its first text, not here)."""
    parsed = EmbedderSpec.parse(spec)
    if parsed.kind == "hash":
        return HashingEmbedder()
    if parsed.kind == "e5":
        from vectors.models import E5Embedder

        return E5Embedder(threads=int(parsed.options.get("threads", "0")) or None)
    if parsed.kind == "st":
        from vectors.models import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(Path(parsed.target), **parsed.options)
    from vectors.service import ServiceEmbedder

    return ServiceEmbedder(parsed.target, **parsed.options)


def embedder_for(home: Path, spec: str | None = None) -> Embedder:
    """The embedder a command uses when none is named: the published version's (read from its manifest),
    else the offline default ``hash``. A named ``spec`` wins."""
    if spec:
        return make_embedder(spec)
    from schemas.published import check_format, published_dir, read_manifest

    folder = published_dir(home) if Path(home).is_dir() else None
    if folder is None:
        return HashingEmbedder()
    manifest = read_manifest(folder)
    check_format(Path(home), manifest.format_version)
    if not manifest.embedder_spec:  # every format-2 manifest records it (``zan migrate`` fills older ones)
        raise EmbedderError(f"{folder / 'manifest.json'} does not say how to make its embedder: give --embedder")
    return make_embedder(manifest.embedder_spec)
