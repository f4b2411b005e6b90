"""Issue 29 item 3: ``train bc --dataset-out`` (``save_dataset``) writes through a temporary renamed when
complete: killed mid-write (SIGKILL) it leaves no file under the final name; a full disk names the path."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from urbanarena.agents.bc.train import Dataset, load_dataset, save_dataset
from urbanarena.errors import RunIOError

SRC = Path(__file__).resolve().parents[1] / "src"


def _ds(n=64):
    rng = np.random.default_rng(0)
    return Dataset(rng.random((n, 8), dtype=np.float32), np.ones((n, 4), bool), rng.integers(0, 4, n))


def test_round_trip_and_no_temporary_left(tmp_path):
    p = save_dataset(_ds(), tmp_path / "d.npz")
    back = load_dataset(p)
    assert np.array_equal(back.actions, _ds().actions)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["d.npz"]


def test_killed_mid_write_leaves_nothing_under_the_final_name(tmp_path):
    out = tmp_path / "big.npz"
    code = textwrap.dedent(f"""
        import os, signal, sys, zipfile
        sys.path.insert(0, {str(SRC)!r})
        import numpy as np
        from urbanarena.agents.bc.train import Dataset, save_dataset
        real = zipfile.ZipFile.open
        calls = []
        def die(self, name, mode="r", *a, **k):  # the second array is about to be written: kill here
            if mode == "w":
                calls.append(name)
                if len(calls) == 2:
                    os.kill(os.getpid(), signal.SIGKILL)
            return real(self, name, mode, *a, **k)
        zipfile.ZipFile.open = die
        ds = Dataset(np.zeros((1000, 8), np.float32), np.ones((1000, 4), bool), np.zeros(1000, np.int64))
        save_dataset(ds, {str(out)!r})
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert r.returncode == -9, r.stderr.decode()[-500:]
    assert not out.exists()
    # the kill came mid-write: a partial temporary may be left beside it, never a file under the final name
    assert all(x.name != "big.npz" for x in tmp_path.iterdir())


def test_disk_full_names_the_path(tmp_path, monkeypatch):
    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(np, "savez_compressed", full)
    with pytest.raises(RunIOError, match="d.npz"):
        save_dataset(_ds(), tmp_path / "d.npz")
    assert list(tmp_path.iterdir()) == []
