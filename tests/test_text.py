"""The one input normaliser (:func:`schemas.text.clean_text`) against its definition, character by character:
its one-scan shortcut for text with nothing to clean must never pass over a character that the definition
changes, in any script."""

from __future__ import annotations

import re
import sys
import unicodedata

from schemas.identifiers import normalize_space
from schemas.text import BMP_DIGIT_ZEROS, CONTROL, INVISIBLE, clean_text


def _by_definition(text: str) -> str:
    """The module docstring's rules, spelled out with no shortcut."""
    text = unicodedata.normalize("NFC", text)
    text = re.sub(f"[{INVISIBLE}]", "", text)
    text = re.sub(f"[{CONTROL}]", " ", text)
    return "".join(str(unicodedata.digit(c)) if c.isdecimal() and not c.isascii() else c for c in text)


def test_the_table_of_digit_zeros_is_python_s_own() -> None:
    bmp = [c for c in map(chr, range(0x80, 0x10000)) if re.match(r"\d", c)]
    assert [ord(c) for c in bmp if unicodedata.digit(c) == 0] == list(BMP_DIGIT_ZEROS), unicodedata.unidata_version
    assert len(bmp) == 10 * len(BMP_DIGIT_ZEROS)  # each zero opens a run of ten: «٠»…«٩»


def test_every_code_point_is_cleaned_as_the_definition_says() -> None:
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue  # surrogates: never in a decoded str
        text = f"ст. 1{chr(code)}2"
        assert clean_text(text) == _by_definition(text), hex(code)


def test_what_readers_meet_comes_out_as_they_read_it() -> None:
    assert clean_text("ст. 1\u200b82") == "ст. 182"  # zero-width space: not articles 1 and 82
    assert clean_text("№ 21\u00ad1") == "№ 211"  # soft hyphen: never a dash
    assert clean_text("приказ ２１１ и ٢١١, 𝟐𝟏𝟏") == "приказ 211 и 211, 211"
    assert clean_text("приказ и\u0306") == "приказ й"  # NFD «й» from a paste: one code point
    assert normalize_space("a\x00b\u00a0\u202fc  ") == "a b c"
    plain = "Статья 156. Трудовой договор 😀"
    assert clean_text(plain) is plain  # nothing to clean: the same object back, no copy


def test_normalize_space_s_shortcut_never_passes_over_a_space_of_any_script() -> None:
    """A line that is printable and has no double, leading or trailing space is returned as cleaned: every
    BMP code point between words, doubled, and at either end gives what splitting and joining gives
    (clean_text itself is checked against the definition above; no white space lies beyond the BMP)."""
    assert not any(chr(code).isspace() for code in range(0x10000, sys.maxunicode + 1))
    for code in range(0x10000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        c = chr(code)
        for text in (f"а{c}б", f"а{c}{c}б", f"{c}б", f"а{c}"):
            assert normalize_space(text) == " ".join(clean_text(text).split()), (hex(code), text)
