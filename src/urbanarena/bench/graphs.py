"""Graph scale: load time, shortest-path distance field and peak memory.

Two graphs:

* **Touchdown scale** (``graph_load_s``, ``graph_load_mb``): the real Touchdown /
  StreetLearn graph (29,641 nodes, 61,319 links) imported from
  ``<shared>/touchdown`` with :func:`urbanarena.world.importers.touchdown.import_city`
  when that folder holds ``nodes.txt[.gz]`` and ``links.txt[.gz]`` (``--shared DIR``,
  ``$URBANARENA_SHARED_DATA``, or the checkout's ``../shared/data``). Without it, a
  saved synthetic street grid of the same scale (:func:`~urbanarena.bench.scenes.save_grid_city`,
  k = 40: 29,680 nodes, 62,400 directed edges) loaded with
  :func:`~urbanarena.world.city_io.load_city` — ``graph_load_source`` says which;
* **city scale** (``graph_1m_*``): a saved synthetic street grid of 1,000,960 pose
  nodes and 2,106,800 directed edges (k = 230 intersections a side, blocks of ten
  10 m segments) — StreetLearn covers about 114k panoramas, a city-scale
  platform must handle ten times that.

Each graph is loaded in a fresh child process (``python -m urbanarena.bench.graphs
--child``) into our :class:`~urbanarena.world.city.City` (a networkx ``DiGraph``),
with ``verify_hash=False`` as runner workers load it (the driver verifies the
content hash once per run; ``graph_*_verify_s`` times that check separately
where measured). Then the shortest-path distance field from every node to one
goal (the grid's centre node) is computed with scipy: the City's edges into a
CSR matrix of the *reversed* graph (``length_m`` weights; ``graph_1m_csr_s``), then
:func:`scipy.sparse.csgraph.dijkstra` from the goal (``graph_1m_dijkstra_s``);
``graph_*_field_s`` is both steps. Memory: the child's peak RSS (``VmHWM``, :func:`~urbanarena.bench.common.peak_rss_mb`) at the end, and its RSS after
imports (``*_base_mb``); ``graph_*_mb`` is the peak (the whole process, the
figure a user sees), ``graph_*_own_mb`` peak minus base.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from urbanarena.bench.common import child_main, peak_rss_mb, rounded, rss_mb, run_child, temp_root

TOUCHDOWN_K = 40      # 29,680 nodes: Touchdown's 29,641
CITY_K = 230          # 1,000,960 nodes
QUICK_K = 12          # 2,520 nodes


def shared_data_dir(explicit: str | Path | None = None) -> Path | None:
    """The real-data folder: ``explicit``, else ``$URBANARENA_SHARED_DATA``, else ``<checkout>/../shared/data``
    (an editable install); ``None`` when none exists."""
    cands = [explicit, os.environ.get("URBANARENA_SHARED_DATA")]
    import urbanarena

    cands.append(Path(urbanarena.__file__).resolve().parents[3] / "shared" / "data")
    for c in cands:
        if c and Path(c).is_dir():
            return Path(c)
    return None


def touchdown_dir(shared: Path | None) -> Path | None:
    """``<shared>/touchdown`` (or its ``graph/``) when it holds the nodes and links files, else ``None``."""
    if shared is None:
        return None
    for d in (shared / "touchdown", shared / "touchdown" / "graph"):
        if any((d / f).is_file() for f in ("nodes.txt", "nodes.txt.gz")) and \
                any((d / f).is_file() for f in ("links.txt", "links.txt.gz")):
            return d
    return None


def reverse_csr(city):
    """``(matrix, index)``: the City's edges as a scipy CSR matrix of the *reversed* graph (entry ``[v, u]`` =
    ``length_m`` of edge ``u -> v``, metres) and ``{node: row}`` in ``city.graph`` node order."""
    from scipy.sparse import csr_matrix

    g = city.graph
    index = {n: i for i, n in enumerate(g.nodes)}
    m = g.number_of_edges()
    rows = np.empty(m, np.int64)
    cols = np.empty(m, np.int64)
    w = np.empty(m, np.float64)
    for k, (u, v, length) in enumerate(g.edges(data="length_m")):
        rows[k], cols[k], w[k] = index[v], index[u], length  # reversed: distances *to* the goal
    n = len(index)
    return csr_matrix((w, (rows, cols)), shape=(n, n)), index


def distance_field(city, goal: str, csr=None) -> np.ndarray:
    """Shortest-path distance in metres from every node of ``city`` to ``goal`` (``inf`` where unreachable),
    in ``city.graph`` node order: :func:`scipy.sparse.csgraph.dijkstra` from ``goal`` on :func:`reverse_csr`
    (pass ``csr`` to reuse one).

    Raises: ``KeyError`` if ``goal`` is not a node.
    """
    from scipy.sparse.csgraph import dijkstra

    rev, index = csr if csr is not None else reverse_csr(city)
    return dijkstra(rev, directed=True, indices=index[goal])


def _child(argv: list[str]) -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--city-dir")
    ap.add_argument("--touchdown")
    ap.add_argument("--goal")
    ap.add_argument("--verify", action="store_true")
    a = ap.parse_args(argv)
    from urbanarena.world.city_io import load_city

    import scipy.sparse.csgraph  # noqa: F401 - imported before timing

    if a.touchdown:
        from urbanarena.world.importers.touchdown import import_city
    base = rss_mb() or peak_rss_mb()
    t = time.perf_counter()
    city = import_city(a.touchdown) if a.touchdown else load_city(a.city_dir, verify_hash=False)
    load_s = time.perf_counter() - t
    load_peak = peak_rss_mb()
    goal = a.goal if a.goal in city.graph else sorted(city.graph.nodes)[len(city.graph) // 2]
    t = time.perf_counter()
    csr = reverse_csr(city)
    csr_s = time.perf_counter() - t
    dist = distance_field(city, goal, csr)
    field_s = time.perf_counter() - t
    out = {"nodes": city.graph.number_of_nodes(), "edges": city.graph.number_of_edges(), "load_s": load_s,
           "field_s": field_s, "csr_s": csr_s, "base_mb": base, "load_peak_mb": load_peak, "peak_mb": peak_rss_mb(),
           "goal": goal, "reachable": int(np.isfinite(dist).sum()), "max_dist_m": float(dist[np.isfinite(dist)].max())}
    if a.verify:
        t = time.perf_counter()
        city.__dict__.pop("content_hash", None)
        _ = city.content_hash
        out["verify_s"] = time.perf_counter() - t
        out["peak_mb"] = peak_rss_mb()
    return out


def _grid_goal(k: int, segments: int = 10) -> str:
    c = (k // 2) * segments
    return f"{c},{c}"


def _load_grid(root: Path, k: int, verify: bool, timeout_s: float) -> dict[str, Any]:
    from urbanarena.bench.scenes import save_grid_city

    t = time.perf_counter()
    d = save_grid_city(root / f"grid-{k}", k)
    write_s = time.perf_counter() - t
    size_mb = sum(p.stat().st_size for p in d.iterdir()) / 2**20
    args = ["--city-dir", str(d), "--goal", _grid_goal(k)] + (["--verify"] if verify else [])
    r = run_child("urbanarena.bench.graphs", args, timeout_s)
    r["write_s"] = write_s
    r["file_mb"] = size_mb
    return r


def measure_touchdown(quick: bool = False, shared: str | Path | None = None, timeout_s: float = 300.0) -> dict[str, Any]:
    """``graph_load_s``, ``graph_load_mb`` and companions (module docstring)."""
    td = touchdown_dir(shared_data_dir(shared))
    root = temp_root()
    try:
        if td is not None and not quick:
            r = run_child("urbanarena.bench.graphs", ["--touchdown", str(td)], timeout_s)
            source = f"Touchdown graph imported from {td} (touchdown importer: parse, geodesics, graph)"
            note = None
        else:
            k = QUICK_K if quick else TOUCHDOWN_K
            r = _load_grid(root, k, verify=True, timeout_s=timeout_s)
            source = f"synthetic street grid k={k} (saved city, load_city)"
            note = ("real Touchdown graph not found (looked in --shared, $URBANARENA_SHARED_DATA, ../shared/data); "
                    "measured on a synthetic street grid of the same scale" if td is None else
                    "--quick: a small synthetic grid instead of the Touchdown graph")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out = {"graph_load_s": rounded(r["load_s"]), "graph_load_mb": rounded(r["peak_mb"], 1),
           "graph_load_own_mb": rounded(r["peak_mb"] - r["base_mb"], 1), "graph_load_base_mb": rounded(r["base_mb"], 1),
           "graph_load_nodes": r["nodes"], "graph_load_edges": r["edges"], "graph_load_source": source,
           "graph_field_s": rounded(r["field_s"])}
    if "verify_s" in r:
        out["graph_verify_s"] = rounded(r["verify_s"])
    if note:
        out["_notes"] = {"graph_load_s": note}
    return out


def measure_1m(quick: bool = False, timeout_s: float = 400.0) -> dict[str, Any]:
    """``graph_1m_load_s``, ``graph_1m_field_s``, ``graph_1m_mb`` and companions (module docstring);
    ``quick``: a 2,520-node grid through the same code (``graph_1m_nodes`` says the size)."""
    root = temp_root()
    try:
        r = _load_grid(root, QUICK_K if quick else CITY_K, verify=False, timeout_s=timeout_s)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"graph_1m_load_s": rounded(r["load_s"]), "graph_1m_field_s": rounded(r["field_s"]),
            "graph_1m_csr_s": rounded(r["csr_s"]), "graph_1m_dijkstra_s": rounded(r["field_s"] - r["csr_s"]),
            "graph_1m_mb": rounded(r["peak_mb"], 1), "graph_1m_own_mb": rounded(r["peak_mb"] - r["base_mb"], 1),
            "graph_1m_load_peak_mb": rounded(r["load_peak_mb"], 1),
            "graph_1m_nodes": r["nodes"], "graph_1m_edges": r["edges"], "graph_1m_reachable": r["reachable"],
            "graph_1m_write_s": rounded(r["write_s"]), "graph_1m_file_mb": rounded(r["file_mb"], 1)}


if __name__ == "__main__":
    child_main(_child)
