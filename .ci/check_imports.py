"""Every third-party module that ``src/urbanarena`` imports belongs to a dependency pyproject.toml declares.

Rules (static, from the source's ``import`` statements, function-level ones included):

* the distribution that provides an imported top-level module (``importlib.metadata``'s
  ``packages_distributions()`` of this environment, or :data:`NOT_INSTALLED` for extras that
  CI does not install) must be named *directly* in ``[project] dependencies`` or in an extra:
  a package that only arrives as a dependency of another one does not count (that is how
  ``httpx`` went missing when the SDKs moved to ``httpx2``);
* files under a path of :data:`EXTRA_OF` may use the base dependencies and that extra (plus the
  extras it includes); every other file the base dependencies or any extra (optional features
  import lazily; add a file's path to :data:`EXTRA_OF` to hold it to one extra).

Usage: ``python3 .ci/check_imports.py`` (exit 1 and one line per offending import).
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import inspect
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "urbanarena"

#: path prefix below src/urbanarena -> the extra its imports belong to
EXTRA_OF = {
    "agents/clients/": "vlm",
    "agents/ocr_agent.py": "ocr",
    "render/scene3d/legibility.py": "ocr",
    "web/": "web",
    "cli/play_cmd.py": "web",
    "cli/replay_cmd.py": "web",
    "report/html.py": "report",
    "report/charts.py": "report",
    "report/video.py": "video",
    "runner/export.py": "export",
    "runner/ray_backend.py": "ray",
    "world/importers/panoramax/": "panoramax",
    "bench/cut.py": "bench",
    "bench/metadrive_probe.py": "bench",
    "agents/bc/": "train",
}
#: module -> distribution for packages of opt-in extras that need not be installed here
NOT_INSTALLED = {"metadrive": "metadrive-simulator", "av": "av", "ray": "ray", "py360convert": "py360convert",
                 # the train extra: .ci/run installs it after this check (PyTorch's CPU build first)
                 "torch": "torch", "safetensors": "safetensors", "datasets": "datasets"}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str:
    return norm(re.split(r"[\s<>=!~;\[(]", req.strip(), maxsplit=1)[0])


def declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = {requirement_name(r) for r in project["dependencies"]}
    raw = project.get("optional-dependencies", {})
    extras: dict[str, set[str]] = {}

    def expand(name: str, seen: frozenset = frozenset()) -> set[str]:
        out: set[str] = set()
        for r in raw.get(name, []):
            m = re.fullmatch(r"\s*urbanarena\[([^\]]+)\]\s*", r)
            if m:
                for sub in m.group(1).split(","):
                    if sub.strip() not in seen:
                        out |= expand(sub.strip(), seen | {name})
            else:
                out.add(requirement_name(r))
        return out

    for name in raw:
        extras[name] = expand(name)
    return base, extras


def imports(path: Path):
    """(top-level module, line) of every absolute import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for n in ast.walk(tree):
        names = []
        if isinstance(n, ast.Import):
            names = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
            names = [n.module]
        for name in names:
            yield name.split(".")[0], n.lineno


def main() -> int:
    base, extras = declared()
    anywhere = base.union(*extras.values())
    dists = {k: [norm(d) for d in v] for k, v in md.packages_distributions().items()}
    # Python 3.11's packages_distributions() misses a top-level extension module that a wheel ships without a
    # top_level.txt (OpenEXR's ``OpenEXR.cpython-311-*.so``): map such files from the distributions' records
    for dist in md.distributions():
        for f in dist.files or ():
            if len(f.parts) == 1 and f.name.endswith((".so", ".pyd")):
                mod = inspect.getmodulename(f.name)
                if mod:
                    dists.setdefault(mod, []).append(norm(dist.metadata["Name"]))
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        extra = next((e for p, e in EXTRA_OF.items() if rel.startswith(p)), None)
        for top, line in imports(path):
            if top in sys.stdlib_module_names or top in ("urbanarena", "__future__"):
                continue
            provided = dists.get(top) or ([norm(NOT_INSTALLED[top])] if top in NOT_INSTALLED else [])
            if not provided:
                problems.append(f"{rel}:{line}: imports {top!r}, which no installed distribution provides")
                continue
            allowed = base | extras.get(extra, set()) if extra else anywhere
            if not allowed.intersection(provided):
                where = f"the {extra!r} extra" if extra else "the base dependencies or any extra"
                problems.append(f"{rel}:{line}: imports {top!r} (distribution {', '.join(provided)}), "
                                f"not declared in {where}")
    for p in problems:
        print(p)
    print(f"import check: {len(problems)} undeclared import(s) in {SRC.relative_to(ROOT)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
