"""The task schema's bounds (issue 29, item 8): garbage that ran with exit 0 is refused, by every task
source (task files through ``load_task_file``/``resolve_task_set``, foreign importers, generators: all build
:class:`~urbanarena.tasks.schema.Task`), with a ``TaskFormatError`` naming the file, the task and the field,
and through ``urbanarena run`` exit 2 with no RUN_DIR.

The property test draws ids and texts of hostile characters and lengths and compares the schema's verdict
with a second, plain implementation of the rule written here from the module docstring.
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner

from runner_util import write_inputs
from urbanarena.cli.main import app
from urbanarena.errors import TaskFormatError
from urbanarena.tasks import schema
from urbanarena.tasks.resolve import resolve_task_set

runner = CliRunner()
BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _mutated(tmp_path, mutate, index=1):
    city_dir, tasks_path, city, _ = write_inputs(tmp_path)
    raw = json.loads(tasks_path.read_text())
    mutate(raw, raw["tasks"][index])
    bad = tmp_path / "bad_tasks.json"
    bad.write_text(json.dumps(raw))
    return city_dir, bad, city


def _set(key, value):
    return lambda raw, t: t.__setitem__(key, value)


CASES = [
    ("empty id", _set("task_id", ""), "empty id"),
    ("NUL id", _set("task_id", "a\x00b"), "U\\+0000"),
    ("RLO id", _set("task_id", "a\u202eb"), "U\\+202E"),
    ("newline id", _set("task_id", "a\nb"), "U\\+000A"),
    ("huge id", _set("task_id", "x" * 1_000_000), "1000000 characters"),
    ("other city", lambda raw, t: t["city"].__setitem__("name", "atlantis"), "atlantis"),
    ("file for other city", lambda raw, t: raw["city"].__setitem__("name", "atlantis"), "atlantis"),
    ("1000 copies of a goal", lambda raw, t: t.__setitem__("goals", [t["goals"][0]] * 1000), "goals"),
    ("two equal goals", lambda raw, t: t.__setitem__("goals", [t["goals"][0]] * 2), "repeats goal 0"),
    ("privileged yes", _set("privileged", "yes"), "privileged"),
    ("privileged 1", _set("privileged", 1), "privileged"),
    ("radius 1e308", _set("success_radius_m", 1e308), "success_radius_m"),
    ("6 MB question", _set("instruction", "q" * 6_000_000), "6000000 characters"),
    ("NUL in question", _set("instruction", "go\x00 north"), "U\\+0000"),
    ("RLO in question", _set("instruction", "go \u202enorth"), "U\\+202E"),
    ("RLO in label", lambda raw, t: t["goals"][0].__setitem__("label", "shop\u202e"), "U\\+202E"),
    ("huge node id", lambda raw, t: t["start"].__setitem__("node", "n" * 100_000), "100000 characters"),
    ("bidi family", _set("family", "city\u2066seeker"), "U\\+2066"),
]


@pytest.mark.parametrize("what,mutate,match", CASES, ids=[c[0] for c in CASES])
def test_task_file_garbage_refused(tmp_path, what, mutate, match):
    city_dir, bad, city = _mutated(tmp_path, mutate)
    with pytest.raises(TaskFormatError, match=match) as e:
        resolve_task_set(str(bad), city, city_dir)
    msg = str(e.value)
    assert str(bad) in msg and len(msg) < 2000  # names the file; never echoes a megabyte back
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(bad), "--agent", "random",
                            "--out", str(out)])
    assert r.exit_code == 2 and r.output.startswith("error:") and "Traceback" not in r.output, r.output[:500]
    assert not out.exists()


def test_valid_file_still_runs_edge_values(tmp_path):
    """Values at the bounds pass: tab/newline in a question, non-ASCII, a radius of MAX_RADIUS_M."""
    def edge(raw, t):
        t["instruction"] = "Kävele\tpohjoiseen.\nThen turn \u00e0 droite \U0001f3e6"
        t["success_radius_m"] = schema.MAX_RADIUS_M
        t["task_id"] = "i" * schema.MAX_ID_CHARS
    city_dir, path, city = _mutated(tmp_path, edge)
    ts = resolve_task_set(str(path), city, city_dir)
    assert ts.tasks[1].success_radius_m == schema.MAX_RADIUS_M


def _plain_id_ok(s: str) -> bool:
    if not 1 <= len(s) <= schema.MAX_ID_CHARS:
        return False
    for c in s:
        o = ord(c)
        if unicodedata.category(c) == "Cc" or o in BIDI or o in (0x2028, 0x2029) or 0xD800 <= o <= 0xDFFF:
            return False
    return True


def _plain_text_ok(s: str, limit: int) -> bool:
    if len(s) > limit:
        return False
    for c in s:
        o = ord(c)
        if (unicodedata.category(c) == "Cc" and c not in "\t\n\r") or o in BIDI or 0xD800 <= o <= 0xDFFF:
            return False
    return True


_chars = st.one_of(st.characters(), st.sampled_from(["\x00", "\t", "\n", "\r", "\x7f", "\x85", "\u202e", "\u2067",
                                                     "\u200f", "\u061c", "\u2028", "\ud800", "\u200d", "é", "/"]))


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(_chars, max_size=12), st.text("ab\u202e", min_size=250, max_size=260)))
def test_ids_match_plain_rule(s):
    def make():
        return schema.Task(task_id=s, family="f", city={"name": "c"}, start={"node": "n"})
    if _plain_id_ok(s):
        assert make().task_id == s
    else:
        with pytest.raises(ValidationError):
            make()


@settings(max_examples=300, deadline=None)
@given(st.text(_chars, max_size=30), st.integers(0, 2))
def test_texts_match_plain_rule(s, pad):
    s = s + "x" * (schema.MAX_LABEL_CHARS - 29 if pad == 2 else 0)

    def make():
        return schema.Task(task_id="t", family="f", city={"name": "c"}, start={"node": "n"}, instruction=s,
                           goals=[{"node": "g", "label": s}])
    if _plain_text_ok(s, schema.MAX_LABEL_CHARS):
        assert make().goals[0].label == s
    else:
        with pytest.raises(ValidationError):
            make()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6)))
def test_radius_bounds(r):
    def make():
        return schema.Task(task_id="t", family="f", city={"name": "c"}, start={"node": "n"}, success_radius_m=r)
    if r == r and 0 <= r <= schema.MAX_RADIUS_M:  # r == r: not NaN
        assert make().success_radius_m == r
    else:
        with pytest.raises(ValidationError):
            make()


def test_foreign_source_goes_through_the_schema(tmp_path, monkeypatch):
    """A foreign importer's tasks pass the same schema: one building a task with a bidi id is refused, and
    resolve names the file (a TaskFormatError, not a pydantic traceback)."""
    from urbanarena.tasks.families import families

    city_dir, tasks_path, city, _ = write_inputs(tmp_path)
    fam = families()["cityseeker"]

    def load_foreign(path, c):
        return [schema.Task(task_id="q\u202e1", family="cityseeker", city={"name": c.name},
                            start={"node": next(iter(c.graph.nodes))})]
    monkeypatch.setattr(type(fam), "load_foreign", lambda self, p, c: load_foreign(p, c))
    src = tmp_path / "q.json"
    src.write_text("[]")
    with pytest.raises(TaskFormatError, match="U\\+202E") as e:
        resolve_task_set(f"{fam.foreign_format}:{src}", city, city_dir)
    assert str(src) in str(e.value)


def test_duplicate_huge_ids_not_echoed(tmp_path):
    def dup(raw, t):
        raw["tasks"][0]["task_id"] = raw["tasks"][1]["task_id"] = "d" * 1_000_000
    city_dir, bad, city = _mutated(tmp_path, dup)
    with pytest.raises(TaskFormatError, match="duplicate task_id") as e:
        resolve_task_set(str(bad), city, city_dir)
    assert len(str(e.value)) < 2000
