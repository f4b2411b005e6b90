"""Issue-5 acceptance on the default city (the Helsinki core as ``urbanarena city build helsinki`` builds
it from the pinned extract; skipped when the extract cannot be had), through the CLI:
``tasks generate --suite cityseeker`` -> ``run`` -> ``summary --json``. The oracle scores 100 % TC-E
under both graph protocols; random (3 seeds) and forward are run and reported with cluster-bootstrap
95 % CIs (printed with ``-s``). The numbers at ``--per-category 10`` are in docs/cityseeker-generation.md.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from generate_util import helsinki_area, helsinki_pbf_path
from urbanarena.cli.main import app
from urbanarena.tasks.generators.cityseeker_needs import ALL_CATEGORIES
from urbanarena.world.city_io import save_city

PER_CATEGORY = 2


def cli(*args) -> str:
    r = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout


@pytest.fixture(scope="module")
def suite(request, tmp_path_factory):
    city = helsinki_area(str(helsinki_pbf_path(request, tmp_path_factory)), "test")
    root = tmp_path_factory.mktemp("hel-needs")
    city_dir = save_city(city, root / "city")
    tasks = root / "needs.json"
    cli("tasks", "generate", "--city", city_dir, "--suite", "cityseeker", "--per-category", PER_CATEGORY,
        "--seed", 0, "--out", tasks)
    return city, city_dir, tasks, root


def summary(run_dir) -> dict:
    return json.loads(cli("summary", run_dir, "--json", "--resamples", 500))


def test_oracle_scores_100_tc_e_and_baselines_are_reported_with_cis(suite):
    city, city_dir, tasks, root = suite
    n = json.loads(tasks.read_text())["tasks"]
    assert len(n) == PER_CATEGORY * len(ALL_CATEGORIES)
    for protocol in ("cityseeker-v1", "urbanarena-graph-v1"):
        out = root / f"oracle-{protocol}"
        cli("run", "--city", city_dir, "--tasks", tasks, "--agent", "oracle", "--protocol", protocol, "--out", out)
        s = summary(out)
        assert s["episodes"] == len(n)
        assert s["metrics"]["tc_exact"] == pytest.approx(100.0) and s["metrics"]["tc_category"] == pytest.approx(100.0)
        assert s["ci95"]["tc_exact"] == pytest.approx([100.0, 100.0])
    for agent, seeds in (("random", 3), ("forward", 1)):
        out = root / agent
        cli("run", "--city", city_dir, "--tasks", tasks, "--agent", agent, "--seeds", seeds, "--out", out)
        s = summary(out)
        m, ci = s["metrics"], s["ci95"]
        assert s["episodes"] == len(n) * seeds
        print(f"\n{agent} ({seeds} seeds, {len(n)} tasks, cityseeker-v1): " + ", ".join(
            f"{k} {m[k]:.1f} [{ci[k][0]:.1f}, {ci[k][1]:.1f}]" for k in ("tc_exact", "tc_proximity_50m", "tc_category",
                                                                       "spl", "ndtw", "goal_dist_m")))
        for k in ("tc_exact", "tc_category", "spl", "goal_dist_m"):
            assert ci[k][0] - 1e-9 <= m[k] <= ci[k][1] + 1e-9, k
        # blind walkers use all 35 steps and rarely end on the goal node
        assert m["tc_exact"] < 50.0 and m["goal_dist_m"] > 30.0
