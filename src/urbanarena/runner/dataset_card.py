"""The dataset card (``README.md``) of a ``tasks export --format hf`` folder.

YAML header: ``license`` (the hub's id where one licence covers everything: ``odbl`` for OSM cities
and their renders, ``cc-by-4.0`` for Touchdown; otherwise ``other`` with ``license_name`` and
``license_details``), ``configs`` (``tasks`` the default, per split; ``reference_images``,
``panoramas``, ``city``), ``task_categories``, ``tags``, ``size_categories``. Text (ours): what the
suite is, the licences and attribution taken from the city and its imagery (graph data, imagery,
per-picture licences of Panoramax cities; CitySeeker data is research use only), sizes per table and
split, how urbanarena installs (from its source checkout, :data:`INSTALL_LINES`: it is not on PyPI),
what the ``answer`` column holds (:func:`urbanarena.runner.answer_column.answer_text`) and how to run the
suite with urbanarena, inspect_ai and lmms-eval.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from urbanarena.agents.registry import FAMILY_VLM_AGENTS
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

#: SPDX-like ids we know -> the hub's licence ids
HUB_LICENCES = {"ODbL-1.0": "odbl", "CC-BY-4.0": "cc-by-4.0", "Apache-2.0": "apache-2.0", "MIT": "mit"}
RESEARCH_ONLY = "research use only"
#: how urbanarena installs (README: from its source checkout; there is no PyPI package)
INSTALL_LINES = ('python3 -m pip install -c constraints.txt -e ".[all]"   # in the checkout',)
INSTALL_INSPECT = 'python3 -m pip install -c constraints.txt -e ".[all,inspect]"   # in the checkout'


def licences_of(city: City, pano_licences: list[str]) -> list[str]:
    """Every licence that applies to the export: the graph data's, then the imagery's (distinct, in order)."""
    out: list[str] = []
    for lic in [city.meta.licence, (city.meta.imagery or {}).get("licence"), *pano_licences]:
        if lic and lic not in out:
            out.append(str(lic))
    return out


def hub_licence(licences: list[str]) -> str:
    """The card's ``license`` id: the hub's id when every licence maps to the same one, else ``other``."""
    ids = {HUB_LICENCES.get(x) for x in licences if not x.startswith("rendered from ")}
    rendered = {HUB_LICENCES.get(x.removeprefix("rendered from ").removesuffix(" data")) for x in licences
                if x.startswith("rendered from ")}
    ids |= rendered
    return ids.pop() if len(ids) == 1 and None not in ids else "other"


def _agents(families: Counter) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for fam in sorted(families):
        out.setdefault(FAMILY_VLM_AGENTS.get(fam, "vlm-cityseeker"), []).append(fam)
    return out


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return name
    return "100K<n<1M"


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.2f} MiB"


def dataset_card(city: City, tasks: list[Task], export: Any, name: str, *, city_spec: str, tasks_spec: str,
                 panoramas: str, pano_licences: list[str], render_credits: dict[str, Any] | None = None) -> str:
    """The card text (module docstring); ``pano_licences``: the per-picture licences of the exported
    panoramas (node attribute ``licence``, Panoramax), empty when the pictures have none of their own;
    ``render_credits``: the photographic assets in ``photo``-style images
    (:func:`urbanarena.render.assets.credits.asset_credits`), whose licences join the card's and are listed
    with their authors (issue 24 item 1), or ``None``."""
    pano_licences = [x for x in pano_licences if x and x != "None"]
    asset_lics = sorted({g["licence"] for g in (render_credits or {}).get("licences", [])})
    lics = licences_of(city, pano_licences) + [f"assets: {x}" for x in asset_lics]
    hub = hub_licence(lics)
    source_kind = (city.meta.source or {}).get("kind", "unknown")
    research_only = source_kind == "cityseeker" or any("research" in x.lower() for x in lics)
    lines = ["---", f"license: {hub}"]
    if hub == "other":
        details = "; ".join(lics) if lics else "not stated by the city or its imagery: ask their owner before redistributing"
        lines += ["license_name: research-use-only" if research_only else f"license_name: {name}-licences",
                  "license_details: " + json.dumps(details)]
    lines += ["pretty_name: " + name, "task_categories:", "- visual-question-answering", "- robotics",
              "tags:", "- embodied-navigation", "- street-view", "- urbanarena",
              f"size_categories:\n- {_size_category(len(tasks))}", "configs:", "- config_name: tasks", "  default: true",
              "  data_files:"]
    for split in sorted(export.splits):
        lines += [f"  - split: {split}", f"    path: {export.files[f'tasks/{split}']}"]
    for cfg in ("reference_images", "panoramas", "city"):
        lines += [f"- config_name: {cfg}", "  data_files:", "  - split: train", f"    path: {export.files[cfg]}"]
    lines.append("---")

    fams = Counter(t.family for t in tasks)
    kinds = Counter(str((t.extra or {}).get("task_kind") or t.category or "-") for t in tasks)
    body = [
        f"# {name}",
        "",
        f"A navigation and question-answering suite of urbanarena tasks in the city `{city.name}` "
        f"(city content hash `{city.content_hash[:16]}…`), exported with `urbanarena tasks export --format hf`. "
        "Each task starts an agent at a pose of the city's street-view graph; it is scored by urbanarena's "
        "family scorers under the protocol named in each row. The rows are the task records; the episodes "
        "themselves need urbanarena's environment (see *How to run*).",
        "",
        "## Licence and attribution",
        "",
        f"- Graph data: {city.meta.licence or 'not stated'}"
        + (f" — {city.meta.attribution}" if city.meta.attribution else ""),
    ]
    imagery = city.meta.imagery or {}
    if imagery:
        body.append(f"- Imagery: {imagery.get('licence') or 'not stated'}"
                    + (f" — {imagery.get('attribution')}" if imagery.get("attribution") else ""))
    elif export.panoramas:
        body.append(f"- Panoramas: rendered by urbanarena from the city's map data; they carry its licence "
                    f"({city.meta.licence or 'not stated'}) and attribution.")
    if pano_licences and (len(pano_licences) > 1
                          or any(x not in (city.meta.licence, imagery.get("licence")) for x in pano_licences)):
        body.append(f"- Per-picture licences of the exported panoramas (column `licence`, with `author` and "
                    f"`source_url`): {', '.join(pano_licences)}.")
    if source_kind == "osm":
        body.append("- OpenStreetMap data is © OpenStreetMap contributors under the ODbL 1.0: attribute it "
                    "wherever the data or images derived from it are shown, and share adaptations of the "
                    "database under the same licence.")
    if research_only:
        body.append("- CitySeeker data is released for research use only: do not redistribute it for other "
                    "purposes.")
    if source_kind == "touchdown":
        body.append("- The Touchdown/StreetLearn graph is CC BY 4.0: credit its authors.")
    if render_credits:
        from urbanarena.render.assets.credits import credit_lines

        body += ["- The rendered images (photo style) contain pixels of third-party files from pinned package "
                 f"releases ({render_credits['files']} files; every file with its licence, authors and sha256 in "
                 "`asset_licences.json`). Credit the authors of CC-BY files wherever the images are shown:",
                 *["  " + line for line in credit_lines(render_credits)]]
    body += [
        "- The task records, dataset card and code are urbanarena's (Apache-2.0).",
        "",
        "## Contents",
        "",
        "| config | split | rows | size |",
        "|---|---|---|---|",
    ]
    for split, n in sorted(export.splits.items()):
        body.append(f"| tasks | {split} | {n} | {_mib(export.bytes_by_table[f'tasks/{split}'])} |")
    for cfg in ("reference_images", "panoramas", "city"):
        body.append(f"| {cfg} | train | {export.rows[cfg]} | {_mib(export.bytes_by_table[cfg])} |")
    if export.static_rows:
        body.append(f"| vlmevalkit (TSV, not a config) | — | {export.static_rows} | "
                    f"{_mib(export.bytes_by_table['vlmevalkit'])} |")
    body += [
        "",
        "Families: " + ", ".join(f"{k} {v}" for k, v in sorted(fams.items()))
        + "; kinds/categories: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) + ".",
        f"Panoramas exported: `{panoramas}` ({len(export.panoramas)} nodes; `start` = start nodes, "
        "`route` = also reference paths and goals).",
        "",
        "## How to run",
        "",
        "urbanarena is not published on PyPI: install it from its source checkout (the repository's README), "
        "inside that checkout, with the exact versions its tests ran with (`constraints.txt`):",
        "",
        "```bash",
        *INSTALL_LINES,
        "```",
        "",
        "With urbanarena (the task file in our schema is beside the tables; one VLM agent per family):",
        "",
        "```bash",
        *[f"urbanarena run --city {city_spec or city.name} --tasks urbanarena/tasks.json --agent {agent} "
          f"--model openai:gpt-4o --out runs/{agent}   # {', '.join(fs)} tasks" for agent, fs in _agents(fams).items()],
        "urbanarena summary runs/...",
        "```",
        "",
        "With inspect_ai (urbanarena's registered task; the model, logs and token accounting are inspect's):",
        "",
        "```bash",
        INSTALL_INSPECT,
        f"inspect eval urbanarena/suite --model openai/gpt-4o -T city={city_spec or city.name} "
        "-T tasks=urbanarena/tasks.json",
        "```",
        "",
        "With lmms-eval (its agentic output type `generate_until_agentic`; lmms-eval in its own environment, "
        "see urbanarena's docs/harnesses.md):",
        "",
        "```bash",
        f"python -m urbanarena.harness.lmms --city {city_spec or city.name} --tasks urbanarena/tasks.json --out lmms-task",
        "python -m lmms_eval --include_path lmms-task --tasks urbanarena_suite --model openai --model_args model=gpt-4o",
        "```",
        "",
        "Column `answer`: the expected answer as plain text: text answers as they are (a grid cell as "
        "`x:N y:M`, a count as its digits, a place name), a number as its decimal text, any other value as "
        "compact JSON; empty for navigation tasks, which are scored by the final position. The exact value "
        "is in `task_json`.",
        "",
        "Loading the tables:",
        "",
        "```python",
        "import datasets",
        "tasks = datasets.load_dataset(\"PATH\")              # config 'tasks', one split per task split",
        "panos = datasets.load_dataset(\"PATH\", \"panoramas\")",
        "```",
    ]
    if export.static_rows:
        body += [
            "",
            "The static table `vlmevalkit/*.tsv` (VLMEvalKit's TSV layout: `index`, base64 `image`, `question`, "
            "`answer`, `category`, `l2-category`, `split`) holds the tasks answered from the start view alone "
            "(localization); without the walk its scores are not the embodied benchmark's.",
        ]
    return "\n".join(lines + [""] + body) + "\n"


__all__ = ["dataset_card", "hub_licence", "licences_of"]
