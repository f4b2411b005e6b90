"""Issue 29 item 10: one rule for ``run --out``: absent, empty, or a run directory to resume; any other
non-empty folder is refused (exit 2) before anything is written there."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from urbanarena.cli.main import app
from urbanarena.errors import UnsafePathError
from urbanarena.runner.run_folder import RUN_MARKERS, check_run_folder


def _tree(p):
    return sorted((x.relative_to(p).as_posix(), x.stat().st_size) for x in p.rglob("*"))


@pytest.mark.parametrize("marker", RUN_MARKERS)
def test_a_folder_with_any_run_file_is_a_run_to_resume(tmp_path, marker):
    (tmp_path / marker).write_bytes(b"")
    (tmp_path / "notes.txt").write_text("mine")
    assert check_run_folder(tmp_path) == tmp_path


def test_absent_and_empty_folders_are_accepted(tmp_path):
    assert check_run_folder(tmp_path / "new") == tmp_path / "new"
    assert check_run_folder(tmp_path) == tmp_path


def test_a_foreign_non_empty_folder_is_refused_naming_what_it_holds(tmp_path):
    for name in ("a.py", "b.txt", "c.md", "d.json"):
        (tmp_path / name).write_text("x")
    with pytest.raises(UnsafePathError, match=r"not a run directory \(holds a.py, b.txt, c.md and 1 more"):
        check_run_folder(tmp_path)


def test_run_refuses_it_with_exit_2_and_writes_nothing(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    before = _tree(home)
    r = CliRunner().invoke(app, ["run", "--city", str(tmp_path / "no-such-city"), "--tasks", "default",
                                 "--agent", "random", "--out", str(home)])
    assert r.exit_code == 2, r.output
    assert "not a run directory" in r.output and "thesis.tex" in r.output
    assert _tree(home) == before
