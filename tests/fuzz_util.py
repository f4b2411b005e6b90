"""Mutation strategies and the outcome check of the property-based importer tests (test_fuzz_*.py).

A case starts from a valid input and applies one to three mutations drawn by hypothesis: replace a value by
a hostile one (extreme and non-finite numbers, huge integers, odd Unicode, wrong types), delete a key or
an element, duplicate an element (duplicated references), point a reference at a name that does not
exist (dangling references), swap two values, add an unknown key, reorder a list (odd but valid values
are in the pool too, so some mutated files pass and are checked whole); then, sometimes, the serialised bytes are truncated or get
an invalid UTF-8 byte, or get nested thousands of lists deep. Each case runs under :func:`case_time_limit` (SIGALRM: a hang fails the case).

Case counts: ``FUZZ_EXAMPLES`` (environment, default :data:`DEFAULT_EXAMPLES`) per test.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import signal
from pathlib import Path
from typing import Any, Callable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from urbanarena.errors import DataFormatError

#: hypothesis examples per fuzz test (about 100-200 per importer, the issue's size)
DEFAULT_EXAMPLES = 150
#: wall-clock limit of one case, seconds
CASE_LIMIT_S = 10.0

#: values a hostile file puts where a number, a string or a list belongs
NASTY_NUMBERS = [0, -1, 1, -0.0, 1e308, -1e308, 1e-320, math.inf, -math.inf, math.nan, 2**63, 2**64 + 1, -(2**63) - 1,
                 10**400, 360.0000001, -360.5, 91.0, 181.0, 1e16, 0.1]
NASTY_STRINGS = ["", " ", "x", "\x00", "a\x00b", "\u202e", "ab\u202ecd", "\u2066x\u2069", "\ud800", "\U0001f3e6",
                 "\U0001f469\u200d\U0001f4bb", "\n", "\t", "NaN", "Infinity", "-inf", "1e309", "\u0661\u0662",
                 "\uff11", "null", "x" * 3000, "../../etc/passwd", "é" * 50]
NASTY_OTHER: list[Any] = [None, True, False, [], {}, [[]], [None], {"": None}, [1, "a", None]]
#: odd values that are still valid in most places (so that mutated files also pass and get checked whole)
EDGE_VALID: list[Any] = [0.0, 1e-9, 359.999, 89.9999, -89.9999, 179.9999, 22.3, 114.18, 5, 42.0,
                         "\U0001f3e6 bank", "\u00dcn\u00efc\u00f6d\u00e9", "\u9280\u884c", "a b"]
NASTY = NASTY_NUMBERS + NASTY_STRINGS + NASTY_OTHER + EDGE_VALID
#: a reference to nothing
GHOST = "ghost-node-that-does-not-exist"


def fuzz_settings(examples: int | None = None) -> settings:
    """Hypothesis settings of one fuzz test: the loaded profile (``ci`` derandomizes, see conftest.py) with
    ``FUZZ_EXAMPLES`` examples, no deadline (the per-case limit is :func:`case_time_limit`)."""
    n = int(os.environ.get("FUZZ_EXAMPLES", examples or DEFAULT_EXAMPLES))
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


class CaseTimeout(AssertionError):
    """A case ran past :data:`CASE_LIMIT_S` (a hang)."""


@contextlib.contextmanager
def case_time_limit(seconds: float = CASE_LIMIT_S):
    """Fail the running case with :class:`CaseTimeout` after ``seconds`` (SIGALRM, main thread); an alarm
    armed outside (pytest-timeout's, for the whole test) is re-armed afterwards with its remaining time."""
    def boom(signum, frame):
        raise CaseTimeout(f"case ran longer than {seconds:g} s")

    import time

    old = signal.signal(signal.SIGALRM, boom)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)  # outer: pytest-timeout's own alarm, if armed
    t0 = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if outer > 0:  # re-arm the whole-test timeout with what is left of it
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - t0), 1e-3))


# ------------------------------------------------------------------ JSON documents
def _locations(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _locations(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _locations(v, prefix + (i,))
    return out


def _get(doc: Any, loc: tuple) -> Any:
    for k in loc:
        doc = doc[k]
    return doc


def _set(doc: Any, loc: tuple, value: Any) -> Any:
    if not loc:
        return value
    _get(doc, loc[:-1])[loc[-1]] = value
    return doc


def _strings(doc: Any) -> list[str]:
    return [v for v in (_get(doc, loc) for loc in _locations(doc)) if isinstance(v, str)]


def _fresh(doc: Any) -> Any:
    """A deep copy that shares nothing (``copy.deepcopy`` keeps shared sub-objects shared, so a change at one
    location would show at another)."""
    if isinstance(doc, dict):
        return {k: _fresh(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_fresh(v) for v in doc]
    return doc


OPS = ("replace", "delete", "duplicate", "dangle", "swap", "retype", "alias", "extra_key", "reorder")


@st.composite
def mutated_json(draw, doc: Any, max_ops: int = 3) -> Any:
    """A mutated deep copy of the JSON value ``doc`` (module docstring)."""
    doc = _fresh(doc)
    for _ in range(draw(st.integers(1, max_ops))):
        locs = _locations(doc)
        loc = draw(st.sampled_from(locs))
        op = draw(st.sampled_from(OPS))
        cur = _get(doc, loc)
        parent = _get(doc, loc[:-1]) if loc else None
        if op == "replace":
            doc = _set(doc, loc, copy.deepcopy(draw(st.sampled_from(NASTY))))
        elif op == "delete" and loc:
            del parent[loc[-1]]
        elif op == "duplicate" and loc and isinstance(parent, list):
            parent.insert(loc[-1], copy.deepcopy(cur))
        elif op == "dangle" and isinstance(cur, str):
            doc = _set(doc, loc, GHOST)
        elif op == "alias":  # a string made equal to another string of the document (duplicate ids, self-loops)
            pool = _strings(doc)
            if pool and isinstance(cur, str):
                doc = _set(doc, loc, draw(st.sampled_from(pool)))
        elif op == "swap" and len(locs) > 2:
            other = draw(st.sampled_from(locs))
            if other and loc and other[: len(loc)] != loc and loc[: len(other)] != other:
                a, b = copy.deepcopy(cur), copy.deepcopy(_get(doc, other))
                doc = _set(doc, loc, b)
                doc = _set(doc, other, a)
        elif op == "extra_key" and isinstance(cur, dict):  # an unknown field (kept or refused, never a crash)
            cur[draw(st.sampled_from(["extra", "\U0001f3e6", "", "id"]))] = draw(st.sampled_from(EDGE_VALID))
        elif op == "reorder" and isinstance(cur, list) and len(cur) > 1:
            cur[:] = draw(st.permutations(cur))
        elif op == "retype":
            if isinstance(cur, bool) or cur is None:
                new: Any = "true"
            elif isinstance(cur, (int, float)):
                new = str(cur)
            elif isinstance(cur, str):
                new = [cur]
            elif isinstance(cur, list):
                new = {str(i): v for i, v in enumerate(cur)}
            else:
                new = list(cur.values())
            doc = _set(doc, loc, new)
    return doc


@st.composite
def damaged_bytes(draw, data: bytes) -> bytes:
    """``data`` as is (most often), truncated at a drawn offset, with an invalid UTF-8 byte inserted, emptied,
    or nested inside many JSON lists."""
    how = draw(st.sampled_from(["keep", "keep", "keep", "truncate", "bad_utf8", "empty", "deep"]))
    if how == "deep":  # the document nested inside k lists: past Python's recursion limit for large k
        k = draw(st.sampled_from([400, 990, 20_000]))
        return b"[" * k + data + b"]" * k
    if how == "truncate" and len(data) > 1:
        return data[: draw(st.integers(0, len(data) - 1))]
    if how == "bad_utf8":
        i = draw(st.integers(0, len(data)))
        return data[:i] + b"\xff\xfe" + data[i:]
    if how == "empty":
        return b""
    return data


def dumps(doc: Any) -> bytes:
    """JSON bytes of ``doc`` (``NaN``/``Infinity`` literals and lone surrogates kept, as a hostile file may)."""
    return json.dumps(doc, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")


# ------------------------------------------------------------------ text lines (CSV-like files)
@st.composite
def mutated_lines(draw, lines: list[list[str]], sep: str = ",", max_ops: int = 3) -> bytes:
    """Rows of fields, mutated (a field replaced/deleted/duplicated, a row deleted/duplicated/swapped), joined."""
    rows = [list(r) for r in lines]
    cells = [str(v) for v in NASTY_NUMBERS + EDGE_VALID] + NASTY_STRINGS + ["", GHOST, "nan", "inf", "-0", "1e400",
                                                                            "0x10", "1_0"]
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(["cell", "cell", "alias", "drop_cell", "add_cell", "drop_row", "dup_row", "swap_rows"]))
        if not rows:
            break
        r = draw(st.integers(0, len(rows) - 1))
        if op in ("cell", "alias", "drop_cell") and not rows[r]:
            continue
        c = draw(st.integers(0, max(0, len(rows[r]) - 1)))
        if op == "cell":
            rows[r][c] = draw(st.sampled_from(cells))
        elif op == "alias":
            pool = [x for row in rows for x in row]
            rows[r][c] = draw(st.sampled_from(pool))
        elif op == "drop_cell":
            del rows[r][c]
        elif op == "add_cell":
            rows[r].insert(c, draw(st.sampled_from(cells)))
        elif op == "drop_row":
            del rows[r]
        elif op == "dup_row":
            rows.insert(r, list(rows[r]))
        else:
            r2 = draw(st.integers(0, len(rows) - 1))
            rows[r], rows[r2] = rows[r2], rows[r]
    text = "\n".join(sep.join(row) for row in rows) + "\n"
    return text.encode("utf-8", "surrogatepass")


# ------------------------------------------------------------------ the outcome check
def check_outcome(call: Callable[[], Any], inputs: list[Path], valid: Callable[[Any], None],
                  typed: tuple[type[BaseException], ...] = (DataFormatError,)) -> str:
    """Run ``call`` under the case time limit; it must return a value that passes ``valid`` or raise one of
    ``typed`` (default :class:`~urbanarena.errors.DataFormatError`: ``CityFormatError``/``TaskFormatError``)
    whose ``path`` is one of ``inputs`` (or a folder holding one) and whose message starts with it.
    Any other exception propagates and fails the case. Returns ``"ok"`` or the error class name."""
    try:
        with case_time_limit():
            result = call()
    except typed as e:
        path = getattr(e, "path", None)
        assert path is not None, f"typed error names no file: {e!r}"
        names = {str(p) for p in inputs} | {str(p.parent) for p in inputs}
        assert path in names, f"error names {path!r}, not one of the inputs {sorted(names)}: {e}"
        assert str(e).startswith(path), str(e)
        return type(e).__name__
    valid(result)
    return "ok"


def valid_city(city: Any) -> None:
    """A returned city: nodes with valid ids and finite positions, edges with finite lengths and azimuths in
    [0, 360), and a save/load round trip that keeps its content hash."""
    import tempfile

    from urbanarena.world.city_io import load_city, save_city
    from urbanarena.world.node_ids import node_id_problem

    g = city.graph
    assert g.number_of_nodes() > 0
    for n, d in g.nodes(data=True):
        assert node_id_problem(n) is None, n
        for k in ("lat", "lon", "x_m", "y_m"):
            assert isinstance(d[k], (int, float)) and not isinstance(d[k], bool) and math.isfinite(d[k]), (n, k, d[k])
        assert -90 <= d["lat"] <= 90 and -180 <= d["lon"] <= 180
    for u, v, d in g.edges(data=True):
        assert math.isfinite(d["length_m"]) and d["length_m"] >= 0, (u, v, d)
        assert 0 <= d["azimuth_deg"] < 360, (u, v, d)
    with tempfile.TemporaryDirectory() as tmp:
        back = load_city(save_city(city, Path(tmp) / "c"))
        assert back.content_hash == city.content_hash


class Tally:
    """Outcome counts of one fuzz test (printed with ``pytest -s``; the note quotes them)."""

    def __init__(self, name: str):
        self.name = name
        self.counts: dict[str, int] = {}

    def add(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1

    def report(self) -> str:
        total = sum(self.counts.values())
        return f"{self.name}: {total} cases " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))


def tallies():
    """Body of a module-scoped ``tally`` fixture: ``{name: Tally}``, each printed at the module's end."""
    t: dict[str, Tally] = {}
    yield t
    for v in t.values():
        print("\n" + v.report())
