"""``urbanarena assets fetch|status`` — the pinned photographic asset packages (issue 24 item 1).

``assets status`` lists every pinned package (registry, version, download size, installed or not, files) and
the licences of the installed files. ``assets fetch`` downloads what is missing (``apt-get download`` /
``npm pack`` when present, else the registry URL), checks each file's sha256, extracts only the listed files
into ``<urbanarena home>/assets/`` and writes the licence manifest ``licences.json`` there. On failure it prints
one line (the renderer then draws the procedural ``realistic`` style) and exits with status 6.

Register in ``cli/main.py`` (``_register_plugins``)::

    from urbanarena.cli.assets_cmd import assets_app
    app.add_typer(assets_app, name="assets")
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

import typer

from urbanarena.cli.common import EXIT_IO, fail

assets_app = typer.Typer(help="Photographic asset packages (pinned, from Debian and npm): fetch, status.",
                         no_args_is_help=True)


def _selected(names: Optional[list[str]]) -> tuple[Any, ...]:
    from urbanarena.render.assets import registry

    if not names:
        return registry.PACKAGES
    try:
        return tuple(registry.package_by_name(n) for n in names)
    except KeyError as e:
        raise fail(ValueError(str(e.args[0]))) from None


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


@assets_app.command("status")
def status(as_json: bool = typer.Option(False, "--json", help="One JSON object: packages and licences.")) -> None:
    """List the pinned packages (version, download size, installed) and the licences of the installed files."""
    from urbanarena import paths
    from urbanarena.render.assets import fetch as F, registry

    pkgs = registry.PACKAGES
    rows = F.package_status(pkgs)
    lic = F.licence_summary()
    total = sum(p.size_bytes for p in pkgs)
    if as_json:
        out = {"directory": str(paths.assets_dir()), "download_bytes": total, "packages": rows, "licences": lic}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        return
    typer.echo(f"photographic assets in {paths.assets_dir()} (one-time download {_mb(total)}):")
    for r in rows:
        state = f"installed, {r['files']} files" if r["installed"] else "not fetched"
        typer.echo(f"  {r['package']} {r['version']} ({r['registry']}, {_mb(r['size_bytes'])}): {state}")
    for x in lic:
        typer.echo(f"  {x['licence']}: {x['files']} file(s) of {x['package']} by {x['authors']}")


@assets_app.command("fetch")
def fetch(
    package: Optional[list[str]] = typer.Option(None, "--package", help="Only this pinned package (repeatable)."),
    no_clients: bool = typer.Option(False, "--no-clients", help="Download from the registry URL, not with "
                                    "apt-get download / npm pack."),
    deadline_s: float = typer.Option(900.0, "--deadline-s", help="Total seconds allowed per package download."),
    force: bool = typer.Option(False, "--force", help="Fetch again even when installed."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object: availability, message, fetches."),
) -> None:
    """Download, verify (sha256) and extract the pinned asset packages; write the licence manifest."""
    from urbanarena.progress import ConsoleProgress
    from urbanarena.render.assets import fetch as F

    pkgs = _selected(package)
    with ConsoleProgress() as progress:
        st = F.ensure_assets(pkgs, use_clients=not no_clients, deadline_s=deadline_s, force=force,
                             progress=progress)
    if as_json:
        out = {"available": st.available, "message": st.message, "directory": str(st.directory),
               "fallback_style": st.fallback_style,
               "fetched": [{"package": r.package, "version": r.version, "via": r.via, "files": r.files,
                            "download_bytes": r.download_bytes, "seconds": round(r.seconds, 2)}
                           for r in st.fetched]}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    else:
        for r in st.fetched:
            typer.echo(f"  {r.package} {r.version}: {r.files} files via {r.via}, {_mb(r.download_bytes)} "
                       f"in {r.seconds:.1f} s")
        typer.echo(st.message, err=not st.available)
    if not st.available:
        raise typer.Exit(EXIT_IO)


__all__ = ["assets_app", "fetch", "status"]
