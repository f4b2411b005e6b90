"""Shared helpers for benchmark scripts."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def need(path: Path) -> Path:
    if not path.exists():
        print(f"skipped: {path} not found (real data lives in ../shared)")
        sys.exit(0)
    return path


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, MiB (Linux ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
