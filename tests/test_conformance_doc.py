"""docs/conformance.md has a rule table for every protocol id that ``urbanarena protocols`` lists (issue 15)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from urbanarena.cli.main import app

DOC = Path(__file__).resolve().parents[1] / "docs" / "conformance.md"
HEADER = "| rule | paper (section) | code, where it differs | ours (module) | test | same / ours |"


def _tables(text: str) -> dict[str, list[str]]:
    """``{protocol id: table rows}`` of the ``## `id` `` sections."""
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"^## `([^`]+)`\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S):
        lines = [l for l in m.group(2).splitlines() if l.startswith("|")]
        if lines and lines[0] == HEADER:
            out[m.group(1)] = [l for l in lines[2:] if l.count("|") >= 7]
    return out


def test_every_listed_protocol_has_a_rule_table():
    r = CliRunner().invoke(app, ["protocols", "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    listed = list(json.loads(r.stdout))
    tables = _tables(DOC.read_text(encoding="utf-8"))
    missing = [p for p in listed if p not in tables]
    assert not missing, f"docs/conformance.md has no rule table for {missing}"
    assert all(len(tables[p]) >= 3 for p in listed), {p: len(tables[p]) for p in listed}


def test_named_tests_exist():
    tests = Path(__file__).resolve().parent
    named = set(re.findall(r"`(test_[a-z0-9_]+\.py)", DOC.read_text(encoding="utf-8")))
    assert named and all((tests / n).is_file() for n in named), sorted(n for n in named if not (tests / n).is_file())
    for file, fn in re.findall(r"`(test_[a-z0-9_]+\.py)::(test_[a-z0-9_]+)`", DOC.read_text(encoding="utf-8")):
        assert re.search(rf"^def {fn}\(", (tests / file).read_text(), flags=re.M), f"{file}::{fn}"


def test_every_named_test_names_its_file():
    """A row's test is ``test_file.py::test_name``: a bare ``::test_name`` leaves the reader (and the check
    above) guessing the file (issue 25 item 6: the urbanground-v1 input rows named tests without one)."""
    bare = re.findall(r"`::(test_[a-z0-9_]+)`", DOC.read_text(encoding="utf-8"))
    assert not bare, bare
