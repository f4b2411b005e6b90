"""Issue 29 items 3, 6, 10 for ``demos export``: files appear under their final names only complete (kill -9
mid-write leaves none), a full disk names the path, and a non-empty folder that is not an export is refused."""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from urbanarena.errors import RunIOError, UnsafePathError

SRC = str(Path(__file__).resolve().parents[1] / "src")

ROW = {"task_id": "t", "seed": 0, "split": "train", "city": "c", "family": "cityarena", "kind": "k",
       "protocol": "p", "system": "s", "prompt": "<image>", "image_labels": ["a"], "step": 1, "reply": "r",
       "action": "STOP", "gym_action": "0", "done": True, "score": 1.0, "turn": "action"}

CHILD = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    import urbanarena.runner.demos as d
    fmt, out = sys.argv[1], sys.argv[2]
    row = {row!r}
    rows = [dict(row, step=k, images=[np.zeros((8, 8, 3), np.uint8)]) for k in range(40)]
    d._split_of = lambda city: "train"
    d.demo_rows = lambda *a, **k: iter(rows) if fmt == "jsonl" else rows
    if fmt == "jsonl":
        real = d._png
        count = [0]
        def png(img):
            count[0] += 1
            if count[0] == 20:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(img)
        d._png = png
    else:
        import datasets
        def to_parquet(self, path, *a, **k):
            with open(path, "wb") as f:
                f.write(b"PAR1" + b"x" * 1000)
                f.flush()
                os.kill(os.getpid(), signal.SIGKILL)
        datasets.Dataset.to_parquet = to_parquet
    d.export_demos(None, [], out, fmt)
""").replace("{row!r}", repr(ROW))


@pytest.mark.parametrize("fmt", ["jsonl", "hf"])
def test_kill_9_mid_write_leaves_no_file_under_its_final_name(tmp_path, fmt):
    if fmt == "hf":
        pytest.importorskip("datasets", reason="the 'train' extra (datasets) is not installed")
    out = tmp_path / "demos"
    p = subprocess.run([sys.executable, "-c", CHILD, fmt, str(out)], env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == -9, p.stderr
    final = [q for q in out.rglob("*") if q.is_file() and not q.name.startswith(".")]
    assert not (out / "train.jsonl").exists() and not (out / "data" / "train-00000-of-00001.parquet").exists()
    for q in final:  # images written so far are whole PNG files
        assert q.suffix == ".png" and q.read_bytes().endswith(b"IEND\xaeB`\x82")


def test_disk_full_names_the_path_and_leaves_no_temporary(tmp_path, monkeypatch):
    import urbanarena.runner.demos as d

    monkeypatch.setattr(d, "_split_of", lambda city: "train")
    monkeypatch.setattr(d, "demo_rows", lambda *a, **k: [dict(ROW, images=[np.zeros((4, 4, 3), np.uint8)])])
    real = Path.open

    def full_open(self, mode="r", *a, **k):
        if "w" in mode and self.name.endswith(".tmp"):
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, mode, *a, **k)
    monkeypatch.setattr(Path, "open", full_open)
    out = tmp_path / "demos"
    with pytest.raises(RunIOError) as ei:
        d.export_demos(None, [], out, "jsonl")
    assert "train.jsonl" in str(ei.value) and "No space left" in str(ei.value)
    assert [q.name for q in out.rglob("*") if q.is_file()] == []


def test_a_non_empty_foreign_folder_is_refused(tmp_path, monkeypatch):
    import urbanarena.runner.demos as d

    monkeypatch.setattr(d, "demo_rows", lambda *a, **k: pytest.fail("rows computed before the folder check"))
    monkeypatch.setattr(d, "_split_of", lambda city: "train")
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UnsafePathError):
        d.export_demos(None, [], tmp_path, "jsonl")
    assert [q.name for q in tmp_path.iterdir()] == ["notes.txt"]
