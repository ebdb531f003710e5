"""HTTP bodies decoded with their size bounded as they decompress.

httpx decodes a compressed body a network read at a time, but each read whole: 131 KB of zstd (``Content-
Encoding: zstd``, 4 GiB of zeros) becomes gigabytes in one call before anyone can count. Here the body's raw
bytes go through one decoder per coding, each handing out at most :data:`PIECE` bytes at a time, so the
caller's count stops a bomb at its cap plus one piece. zstd's window is bounded too (:data:`ZSTD_WINDOW`, the
8 MiB browsers accept for HTTP), since a frame may ask for gigabytes of window before it yields a byte.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import IO, cast

import zstandard

PIECE = 64 * 1024
ZSTD_WINDOW = 8 * 1024 * 1024
# What the fetcher says it accepts (``Accept-Encoding``): exactly the codings decoded here.
ACCEPTED = ("gzip", "deflate", "zstd")


class DecodingProblem(ValueError):
    """A body that cannot be decoded: a coding not accepted, or data that is not what it says."""


class TruncatedBody(DecodingProblem):
    """The compressed data stops before its end: the connection was cut (worth a retry)."""


def codings(header: str | None) -> list[str]:
    """The codings of a ``Content-Encoding`` header, in the order they were applied (``identity`` dropped)."""
    found = [c.strip().lower() for c in (header or "").split(",") if c.strip()]
    found = [c for c in found if c != "identity"]
    for coding in found:
        if coding not in ACCEPTED:
            raise DecodingProblem(f"Content-Encoding {coding!r} is not one zan accepts ({', '.join(ACCEPTED)})")
    if len(found) > 3:
        raise DecodingProblem(f"Content-Encoding names {len(found)} codings; at most 3 are read")
    return found


def decoded(raw: Iterable[bytes], header: str | None) -> Iterator[bytes]:
    """The body's bytes, decoded from every coding ``header`` names, in pieces of at most :data:`PIECE`."""
    pieces: Iterable[bytes] = raw
    for coding in reversed(codings(header)):  # the last coding applied is undone first
        pieces = _zstd(pieces) if coding == "zstd" else _zlib(pieces, coding)
    return iter(pieces)


def _zlib(raw: Iterable[bytes], coding: str) -> Iterator[bytes]:
    """gzip (members one after another, as RFC 1952 allows) or deflate (zlib-wrapped, or raw as some servers
    send it), at most :data:`PIECE` bytes out per step."""
    wbits = 16 + zlib.MAX_WBITS if coding == "gzip" else zlib.MAX_WBITS
    decoder: zlib._Decompress | None = None
    seen = False
    try:
        for block in raw:
            if not block:
                continue
            seen = True
            if decoder is None:
                if coding == "deflate" and not _zlib_header(block):
                    wbits = -zlib.MAX_WBITS  # raw deflate, no zlib header
                decoder = zlib.decompressobj(wbits)
            data = block
            while data:
                out = decoder.decompress(data, PIECE)
                if out:
                    yield out
                data = decoder.unconsumed_tail
                if decoder.eof and decoder.unused_data and coding == "gzip":  # another gzip member
                    data, decoder = decoder.unused_data, zlib.decompressobj(wbits)
        if seen and decoder is not None and not decoder.eof:
            raise TruncatedBody(f"the {coding} data ends before its end")
    except zlib.error as exc:
        raise DecodingProblem(f"the body is not valid {coding}: {exc}") from exc


def _zlib_header(block: bytes) -> bool:
    """A zlib stream's two-byte header (RFC 1950: deflate method, check bits), as «deflate» should be sent."""
    return len(block) >= 2 and block[0] & 0x0F == 8 and (block[0] << 8 | block[1]) % 31 == 0


class _Chunks:
    """A file-like view of an iterator of blocks (what zstandard's stream reader pulls from)."""

    def __init__(self, blocks: Iterable[bytes]) -> None:
        self.blocks, self.held = iter(blocks), b""

    def read(self, size: int = -1) -> bytes:
        while not self.held:
            block = next(self.blocks, None)
            if block is None:
                return b""
            self.held = block
        size = len(self.held) if size < 0 else size
        out, self.held = self.held[:size], self.held[size:]
        return out


def _zstd(raw: Iterable[bytes]) -> Iterator[bytes]:
    """zstd frames one after another, pulled :data:`PIECE` bytes at a time with a bounded window."""
    context = zstandard.ZstdDecompressor(max_window_size=ZSTD_WINDOW)
    try:
        with context.stream_reader(cast(IO[bytes], _Chunks(raw)), read_size=PIECE, read_across_frames=True) as reader:
            while piece := reader.read(PIECE):
                yield piece
    except zstandard.ZstdError as exc:
        raise DecodingProblem(f"the body is not valid zstd: {exc}") from exc
