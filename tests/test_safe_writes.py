"""Issue 29 items 2, 6, 10, 14 (tasks export part): one rule for names that become paths and for --out."""

from __future__ import annotations

import errno

import pytest

from test_hub_export import run_export, suite  # noqa: F401 - the fixture
from urbanarena.errors import UnsafePathError
from urbanarena.safe_paths import MAX_NAME_CHARS, check_name, check_out_folder, confine

BAD_NAMES = ["", " ", "a/b", "..", "../../../../tmp/x/evil", "a\\b", "x..y", ".", "a\x00b", "a\nb",
             "n" * (MAX_NAME_CHARS + 1)]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_check_name_refuses_unsafe_names(name):
    with pytest.raises(UnsafePathError):
        check_name(name, "--name")


@pytest.mark.parametrize("name", ["suite-v1", "helsinki_arena7.v2", "n" * MAX_NAME_CHARS, "städte"])
def test_check_name_accepts_plain_names(name):
    assert check_name(name) == name


def test_confine_and_out_folder(tmp_path):
    assert confine(tmp_path, "a/b.txt") == (tmp_path / "a" / "b.txt").resolve()
    for bad in ("../x", "/etc/passwd", "a/../../x"):
        with pytest.raises(UnsafePathError):
            confine(tmp_path, bad)
    (tmp_path / "link").symlink_to("/tmp")
    with pytest.raises(UnsafePathError):
        confine(tmp_path, "link/x")
    full = tmp_path / "full"
    full.mkdir()
    (full / "f").write_text("x")
    with pytest.raises(UnsafePathError):
        check_out_folder(full)
    with pytest.raises(UnsafePathError):
        check_out_folder(full / "f")
    assert check_out_folder(full, force=True) == full and check_out_folder(tmp_path / "absent") == tmp_path / "absent"


def test_tasks_export_name_cannot_escape_out(suite, tmp_path):  # noqa: F811
    _, city_dir, task_file, _ = suite
    out = tmp_path / "hf"
    evil = tmp_path / "evil"
    r = run_export(city_dir, task_file, out, "--i-hold-the-rights", "--name", f"../../../../{evil}/evilname")
    assert r.exit_code == 2, r.output
    assert "--name" in r.output
    assert not evil.exists() and not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".hf")] == []


def test_out_empty_string_is_refused_by_every_writer(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from urbanarena.cli.main import app
    monkeypatch.chdir(tmp_path)
    cmds = [["run", "--city", "x", "--tasks", "y", "--agent", "oracle"],
            ["demos", "export", "--city", "x", "--tasks", "y"],
            ["tasks", "export", "--city", "x", "--tasks", "y"],
            ["export", str(tmp_path)], ["report", str(tmp_path)], ["play-export", str(tmp_path)],
            ["play", "--city", "x", "--tasks", "y"]]
    for cmd in cmds:
        r = CliRunner().invoke(app, [*cmd, "--out", ""])
        assert r.exit_code == 2 and "must not be empty" in r.output, (cmd, r.output)
    assert list(tmp_path.iterdir()) == []


def test_tasks_export_disk_full_names_the_path_and_leaves_nothing(suite, tmp_path, monkeypatch):  # noqa: F811
    _, city_dir, task_file, _ = suite
    import urbanarena.runner.static_table as st

    def full(path, rows):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr(st, "write_static_tsv", full)
    out = tmp_path / "hf"
    r = run_export(city_dir, task_file, out, "--i-hold-the-rights")
    assert r.exit_code != 0 and r.exit_code != 1, r.output
    assert "static.tsv" in r.output and "No space left" in r.output
    assert not out.exists() and [p for p in tmp_path.iterdir() if p.name.startswith(".hf")] == []
    # a failure in the checks (a non-empty --out is refused) leaves an absent --out absent, an empty one empty
    out.mkdir()
    monkeypatch.undo()
    (tmp_path / "missing.json").write_text("{}")
    assert run_export(city_dir, tmp_path / "missing.json", out).exit_code == 2
    assert out.is_dir() and list(out.iterdir()) == []


def test_atomic_write_names_the_path_on_disk_full_and_leaves_no_temporary(tmp_path):
    from urbanarena.errors import RunIOError
    from urbanarena.safe_paths import atomic_write

    target = tmp_path / "rep.html"

    def full(tmp):
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(RunIOError) as ei:
        atomic_write(target, full)
    assert str(target) in str(ei.value) and "No space left" in str(ei.value)
    assert list(tmp_path.iterdir()) == []
    assert atomic_write(target, lambda tmp: tmp.write_text("ok")) == 2 and target.read_text() == "ok"
    assert [p.name for p in tmp_path.iterdir()] == ["rep.html"]


def test_report_disk_full_names_the_path_and_leaves_no_tmp(tmp_path, monkeypatch):
    from pathlib import Path

    import urbanarena.report.html as h
    monkeypatch.setattr(h, "load_runs", lambda *a, **k: [])
    monkeypatch.setattr(h, "build_report", lambda *a, **k: {})
    monkeypatch.setattr(h, "render_html", lambda ctx: "<html>" + "x" * 100)
    real = Path.write_text

    def full(self, *a, **k):
        real(self, "partial")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(Path, "write_text", full)
    out = tmp_path / "rep.html"
    from urbanarena.errors import RunIOError
    fn = next(getattr(h, n) for n in ("write_report", "write_html_report", "report_html") if hasattr(h, n))
    with pytest.raises(RunIOError) as ei:
        fn([tmp_path], out)
    assert str(out) in str(ei.value) and list(tmp_path.iterdir()) == []
