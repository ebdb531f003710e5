"""One input normaliser for everything that comes from outside: source files and questions alike.

Both sides of every identifier comparison go through :func:`clean_text` first, so a character that looks
like nothing, or like something else, never changes an answer:

- NFC (a question typed or pasted in NFD keeps its Kazakh letters as single code points);
- zero-width characters and bidi controls are removed («ст. 1\\u200b82» is «ст. 182», not articles 1 and 82);
- the soft hyphen is removed, never read as a dash («№ 21\\u00ad1» is «№ 211», not «21-1»);
- any other control character becomes a space (NUL never reaches an id or a title);
- decimal digits of every script (fullwidth «２１１», Arabic-Indic «٢١١») become ASCII digits.

What stays for the canonicalisers (:mod:`schemas.identifiers`), because it is only right *inside*
identifiers: dash spellings and the Cyrillic/Kazakh letters that look Latin.
"""

from __future__ import annotations

import re
import unicodedata

# Zero-width characters, the soft hyphen, bidi marks, embeddings, overrides and isolates, the word joiner and
# the BOM: they render as nothing (or reorder what is shown) and carry no text.
INVISIBLE = "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
CONTROL = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # every C0 and C1 control but tab, line feed, carriage return
_ODD = re.compile(f"[{INVISIBLE}{CONTROL}]")  # one class, one scan: ~1.6 ms over the 530 KB Labour Code page
_INVISIBLE = re.compile(f"[{INVISIBLE}]")
_CONTROL = re.compile(f"[{CONTROL}]")
_FOREIGN_DIGIT = re.compile(r"[^\D0-9]")  # a decimal digit that is not ASCII (\d is every script's)


# The zero of every run of ten non-ASCII decimal digits in the Basic Multilingual Plane (Arabic-Indic «٠»,
# Devanagari «०», fullwidth «０»…), from Unicode 14; tests/test_text.py checks it against Python's own tables.
BMP_DIGIT_ZEROS = (
    0x0660,
    0x06F0,
    0x07C0,
    0x0966,
    0x09E6,
    0x0A66,
    0x0AE6,
    0x0B66,
    0x0BE6,
    0x0C66,
    0x0CE6,
    0x0D66,
    0x0DE6,
    0x0E50,
    0x0ED0,
    0x0F20,
    0x1040,
    0x1090,
    0x17E0,
    0x1810,
    0x1946,
    0x19D0,
    0x1A80,
    0x1A90,
    0x1B50,
    0x1BB0,
    0x1C40,
    0x1C50,
    0xA620,
    0xA8D0,
    0xA900,
    0xA9D0,
    0xA9F0,
    0xAA50,
    0xABF0,
    0xFF10,
)
# Every character clean_text may change, in one class: the invisible and control characters, those digits, and
# anything beyond the BMP (its digits, «𝟎»…, are rare enough for the longer path). A class of BMP characters
# compiles to a bitmap: one scan at about half the cost of the two it spares on text with nothing to clean.
_ANYTHING_TO_CLEAN = re.compile(
    f"[{INVISIBLE}{CONTROL}{''.join(f'{chr(z)}-{chr(z + 9)}' for z in BMP_DIGIT_ZEROS)}\U00010000-\U0010ffff]"
)


def fold_digits(text: str) -> str:
    """Decimal digits of any script as ASCII (length kept, so spans stay valid)."""
    if not _FOREIGN_DIGIT.search(text):
        return text
    return _FOREIGN_DIGIT.sub(lambda m: str(unicodedata.digit(m.group())), text)


def clean_text(text: str) -> str:
    """The text as every reader of zan sees it (the module docstring says what changes). Text with none of
    these characters (almost all) costs two scans (the NFC check, one class) and is returned as it is."""
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    if not _ANYTHING_TO_CLEAN.search(text):
        return text
    if _ODD.search(text):
        text = _CONTROL.sub(" ", _INVISIBLE.sub("", text))
    return fold_digits(text)


_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")


def is_clean_id(value: str) -> bool:
    """True for a doc_id zan can store and match: lower-case ASCII letters, digits, ``.``, ``_``, ``-``."""
    return _ID.fullmatch(value) is not None
