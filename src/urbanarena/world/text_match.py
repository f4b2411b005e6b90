"""Does a piece of read text (OCR output, a model's answer) contain a given name?

Used by the legibility acceptance test, the ``ocr`` baseline agent and name-match validators, so
that "a name counts as read" means the same everywhere (issue 4):

1. **Fold** both strings (:func:`fold_text`): Unicode NFKD, combining marks dropped (diacritics:
   ``ä`` -> ``a``), a few letters without a decomposition mapped by hand (``ø`` -> ``o``, ``æ`` ->
   ``ae``, ``œ`` -> ``oe``, ``ł`` -> ``l``, ``đ`` -> ``d``, ``ı`` -> ``i``, ``þ`` -> ``th``),
   ``str.casefold`` (``ß`` -> ``ss``), and everything that is not a letter or digit
   (``str.isalnum``: spaces, punctuation, symbols) removed. So ``"Kahvila Sävy"``,
   ``"KAHVILA SAVY"`` and ``"kahvila-savy"`` all fold to ``"kahvilasavy"``.
2. **Candidates**: the OCR lines one by one are all contained in the concatenation of all lines
   in the order given (the OCR's reading order); in addition every ordered pair of distinct lines
   ``lines[i] + lines[j]`` (``i < j``, reading order kept), so a two-line sign whose lines are
   separated by a neighbour's text in the reading order is still one candidate.
3. **Distance**: the smallest Levenshtein distance (unit insert/delete/substitute) between the
   folded name and any substring of a folded candidate (approximate substring matching, Sellers
   1980: the dynamic programme with a free start and end in the text), divided by the folded
   name's length. :func:`name_match_distance` returns the smallest over the candidates.
4. A name **is read** when that distance is at most :data:`NAME_MATCH_THRESHOLD` (0.2: one
   error per five characters).

A name that folds to nothing (no letter or digit) can never be read (distance 1.0). Short names
match easily inside longer text (a 3-letter name needs an exact substring): callers that need
precision should also require the name to be long enough or to stand alone.
"""

from __future__ import annotations

import unicodedata
from typing import Iterable, Sequence

#: A name counts as read when :func:`name_match_distance` is at most this (issue 4).
NAME_MATCH_THRESHOLD = 0.2

_EXTRA_FOLD = str.maketrans({"ø": "o", "Ø": "o", "æ": "ae", "Æ": "ae", "œ": "oe", "Œ": "oe", "ł": "l", "Ł": "l",
                             "đ": "d", "Đ": "d", "ı": "i", "þ": "th", "Þ": "th"})


def fold_text(text: str) -> str:
    """Case-, diacritics- and punctuation-folded text (module docstring, step 1)."""
    t = unicodedata.normalize("NFKD", text.translate(_EXTRA_FOLD))
    t = "".join(ch for ch in t if not unicodedata.combining(ch)).casefold()
    return "".join(ch for ch in t if ch.isalnum())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance between two strings (unit insert, delete, substitute)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def substring_edit_distance(pattern: str, text: str) -> int:
    """Smallest Levenshtein distance between ``pattern`` and any substring of ``text`` (the empty one
    included, so at most ``len(pattern)``). Sellers (1980), "The theory and computation of
    evolutionary distances: pattern recognition", J. Algorithms 1: the edit-distance programme with
    row 0 all zeros (free start) and the minimum over the last row (free end)."""
    if not pattern:
        return 0
    prev = [0] * (len(text) + 1)
    for i, x in enumerate(pattern, 1):
        cur = [i]
        for j, y in enumerate(text, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return min(prev)


def name_candidates(lines: Sequence[str]) -> list[str]:
    """Folded candidate texts of OCR ``lines`` (module docstring, step 2), without duplicates."""
    folded = [fold_text(t) for t in lines]
    folded = [t for t in folded if t]
    out = ["".join(folded)] if folded else []
    for i in range(len(folded)):
        for j in range(i + 1, len(folded)):
            out.append(folded[i] + folded[j])
    seen: set[str] = set()
    return [c for c in out if not (c in seen or seen.add(c))]


def name_match_distance(name: str, lines: Iterable[str]) -> float:
    """Normalised distance in ``[0, 1]`` between ``name`` and the best-matching stretch of ``lines``
    (module docstring, steps 1-3); 1.0 for a name without letters or digits or no text."""
    n = fold_text(name)
    if not n:
        return 1.0
    best = len(n)
    for c in name_candidates(list(lines)):
        best = min(best, substring_edit_distance(n, c))
        if best == 0:
            break
    return best / len(n)


def name_is_read(name: str, lines: Iterable[str], threshold: float = NAME_MATCH_THRESHOLD) -> bool:
    """Whether ``name`` counts as read in ``lines`` (distance <= ``threshold``; module docstring)."""
    return name_match_distance(name, lines) <= threshold


__all__ = ["NAME_MATCH_THRESHOLD", "edit_distance", "fold_text", "name_candidates", "name_is_read",
           "name_match_distance", "substring_edit_distance"]
