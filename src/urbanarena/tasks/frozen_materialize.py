"""A frozen suite materialized on this machine: its task file written and its images drawn again, every image and
fingerprint panorama compared with the manifest's hashes (:func:`materialize`), and the line a run prints about the
comparison (:func:`describe_check`). The suites themselves (load, freeze, redraw) are :mod:`.frozen`'s."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

from urbanarena import paths
from urbanarena.progress import Progress
from urbanarena.tasks.frozen import (FrozenSuite, FrozenSuiteError, ReferenceRenderer, _draw_assets, _panorama_hashes,
                                     _pixel_hash, _read_png, _sha256, _write_png, default_reference_renderer)
from urbanarena.tasks.frozen_tolerance import apply_tolerance, coarse_fingerprint, describe_tolerance
from urbanarena.world.city import City


def materialize(fs: FrozenSuite, size: str, city: City, *, dest_root: str | Path | None = None,
                reference_renderer: ReferenceRenderer | None = None, check_panoramas: bool = True,
                progress: Progress | None = None) -> tuple[Path, dict[str, Any]]:
    """Write the task file of one size and redraw its images; compare every hash with the manifest.

    Args:
        fs: the frozen suite (its city hash must equal ``city``'s).
        size: ``mini`` / ``standard`` / ``full`` (one the suite has).
        dest_root: parent folder (default ``<urbanarena home>/suites``); the suite goes to
            ``<dest_root>/<suite>-<size>/tasks.json`` with its images beside it.
        reference_renderer: landmark photo renderer (default :func:`default_reference_renderer`).
        check_panoramas: also render the fingerprint panoramas and compare them.
        progress: hears the images drawn (step ``<suite> images``) and the check panoramas
            (:mod:`urbanarena.progress`); a copy materialized before reports nothing.
    Returns:
        ``(task file path, check)``; ``check``: ``suite``, ``size``, ``task_file`` ("match"),
        ``assets_checked``, ``assets_differ`` (relative paths), ``panoramas_checked``,
        ``panoramas_differ`` (node ids), ``renderer`` (this machine's identity), ``reference_renderer``
        (the manifest's), ``matches`` (no difference found). A manifest with coarse fingerprints
        (``coarse_fingerprint``; :mod:`urbanarena.tasks.frozen_tolerance`) adds ``assets_within_tolerance`` and
        ``panoramas_within_tolerance`` (sha256 differs, every block mean within the tolerance: not in the
        ``*_differ`` lists, ``matches`` unaffected) and ``tolerance``.
    Raises:
        FrozenSuiteError: the city's hash differs, the size is missing, the stored task file is damaged
            (its sha256 differs), or the images cannot be drawn (no renderer: the reason).
    """
    from urbanarena.tasks.generators.suite import draw_asset

    if fs.city_hash != city.content_hash:
        raise FrozenSuiteError(f"frozen suite {fs.name} is for city hash {fs.city_hash[:12]}..., "
                               f"not {city.content_hash[:12]}... ({city.name})")
    if size not in fs.manifest["sizes"]:
        raise FrozenSuiteError(f"frozen suite {fs.name} has no size {size!r}; it has {', '.join(fs.sizes())}")
    entry = fs.manifest["sizes"][size]
    src = fs.directory / entry["file"]
    try:
        blob = gzip.decompress(src.read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise FrozenSuiteError(f"{src}: unreadable frozen task file: {e}") from None
    if _sha256(blob) != entry["task_file_sha256"]:
        raise FrozenSuiteError(f"{src}: task file sha256 differs from the manifest's (damaged or edited copy)")
    dest = Path(dest_root) if dest_root is not None else paths.home() / "suites"
    folder = dest / entry["suite_name"]
    out = folder / "tasks.json"
    check_file = folder / "check.json"
    if out.is_file() and check_file.is_file() and _sha256(out.read_bytes()) == entry["task_file_sha256"]:
        try:
            check = json.loads(check_file.read_text(encoding="utf-8"))
            if (check.get("task_file_sha256") == entry["task_file_sha256"]
                    and all((folder / rel).is_file() for rel in entry["assets"])):
                return out, check
        except (OSError, json.JSONDecodeError):
            pass
    ref = (reference_renderer if reference_renderer is not None
           else default_reference_renderer(city, fs.render_style))
    needs_ref = any(a["kind"] == "reference_view" for a in entry["assets"].values())
    if needs_ref and ref is None:
        from urbanarena.render.scene3d.context import gl_unavailable_reason

        raise FrozenSuiteError(f"frozen suite {entry['suite_name']} needs the 3D renderer to draw its landmark "
                               f"photos, which is unavailable here: {gl_unavailable_reason()}")
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    differ, drawn_coarse, got_coarse = [], {}, {}
    for rel, spec, img in _draw_assets(entry["assets"], city, ref, progress, f"{entry['suite_name']} images"):
        _write_png(tmp / rel, img)
        # hash what a run reads back (the PNG round trip is lossless)
        back = _read_png(tmp / rel)
        if _pixel_hash(back) != spec["pixel_sha256"]:
            differ.append(rel)
            if spec.get("pixel_coarse"):  # a suite with coarse fingerprints: compared within the tolerance
                drawn_coarse[rel] = coarse_fingerprint(back)
    if ref is not None and callable(getattr(ref, "release", None)):
        ref.release()  # its renderers' GL memory, before the fingerprint panoramas take their own
    (tmp / "tasks.json").write_bytes(blob)
    check: dict[str, Any] = {
        "suite": entry["suite_name"], "frozen_suite": fs.name, "size": size, "task_file": "match",
        "task_file_sha256": entry["task_file_sha256"], "assets_checked": len(entry["assets"]),
        "assets_differ": differ, "panoramas_checked": 0, "panoramas_differ": [],
        "reference_renderer": fs.manifest.get("renderer"), "renderer": None, "render_style": fs.render_style,
    }
    if check_panoramas and fs.manifest.get("panorama_fingerprint"):
        from urbanarena.render.scene3d.context import gl_unavailable_reason

        why = gl_unavailable_reason()
        if why is None:
            want = fs.manifest["panorama_fingerprint"]
            got, ident, got_coarse = _panorama_hashes(city, list(want), fs.render_style, progress)
            check["panoramas_checked"] = len(want)
            check["panoramas_differ"] = [n for n in want if got.get(n) != want[n]]
            check["renderer"] = ident
        else:
            check["panoramas_unchecked"] = why
    if fs.manifest.get("coarse_fingerprint"):  # v1..v4 have none: exact only, their check unchanged
        apply_tolerance(check, {rel: a.get("pixel_coarse") for rel, a in entry["assets"].items()}, drawn_coarse,
                        fs.manifest.get("panorama_coarse") or {}, got_coarse)
    check["matches"] = not check["assets_differ"] and not check["panoramas_differ"]
    (tmp / "check.json").write_text(json.dumps(check, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return out, check


def describe_check(check: dict[str, Any]) -> str | None:
    """A warning line when a materialized suite differs from its frozen hashes; when it matches, the notice of
    :func:`~urbanarena.tasks.frozen_tolerance.describe_tolerance` (images drawn within tolerance) or ``None``."""
    if check.get("matches", True):
        return describe_tolerance(check)
    parts = []
    if check.get("assets_differ"):
        parts.append(f"{len(check['assets_differ'])} of {check['assets_checked']} reference images")
    if check.get("panoramas_differ"):
        parts.append(f"{len(check['panoramas_differ'])} of {check['panoramas_checked']} fingerprint panoramas")
    accepted = (" (accepted with --accept-redrawn-images: the agent receives this machine's drawings)"
                if check.get("accepted_redrawn_images") else "")
    return (f"suite {check['suite']}: this machine's renders differ from the frozen suite's ({', '.join(parts)})"
            f"{accepted}; scores are not comparable with runs on the frozen renderer (details in run.json "
            "tasks.suite_check)")


__all__ = ["describe_check", "materialize"]
