"""``urbanarena tasks generate --city NAME --suite arena|cityseeker|urbanground ... --seed S --out FILE [--split S]``.

``--suite urbanground --per-family N [--families l2_short_range,...] [--mapping FILE]`` generates the
UrbanGround ladder (13 sub-families, L1-L5; :mod:`urbanarena.tasks.generators.urbanground`,
docs/continuous.md): every task is run by ``ug-oracle`` through the runner's continuous loop and
dropped when it fails; writes FILE and ``<FILE stem>.report.json``. ``--condition all`` writes every task
once per condition (clear, dusk, night, cloudy, rain; :mod:`urbanarena.tasks.generators.urbanground_conditions`).

``--suite cityseeker --per-category N [--mapping FILE]`` generates the
CitySeeker-style implicit-need suite ``<city>-needs7-v1``
(:mod:`urbanarena.tasks.generators.cityseeker_needs`, docs/cityseeker-generation.md):
every task is run by the graph oracle (:class:`GraphOracleVerifier`) through
the runner's env under ``cityseeker-v1`` and ``urbanarena-graph-v1`` within
35 steps (``--max-steps``); writes FILE and ``<FILE stem>.report.json``.

``--suite arena`` (below):

Generates a ``cityarena`` suite (the seven 360CityArena-style families) from
the city's own data with :func:`urbanarena.tasks.generators.generate_suite`:
every navigation task is verified by the arena oracle
(:class:`urbanarena.agents.arena_oracle.ArenaOracleSolver`) through the real
env under ``cityarena-v1`` and ``urbanarena-v1`` within the step limit. Writes
FILE (task file, ``docs/task-schema.md``), the reference images beside it
(``<suite>_assets/``, paths relative to FILE's folder) and
``<FILE stem>.report.json`` (per family: produced, calibration against the
targets, unavailable families with the reason, verification failures).
``--render-style`` (default ``realistic``) is the style the ``landmark_image``
reference photos are drawn in and their view distance to the goal views is
measured in (:func:`reference_renderer_for`, :func:`reference_check_for`), and in which each photo must
show its goal (:func:`goal_share_for`). On a city of real pictures ``landmark_image``'s references are views
cut from other real pictures (``--reference-pictures DIR_OR_CSV``, or a Panoramax city's STAC searched around
each POI; :func:`real_references_for`, :mod:`urbanarena.tasks.generators.real_references`), generated only with
``--confirm-landmark-references`` (their pixels are not checked); POIs without one are counted. Prints
the per-family summary. ``--split S`` on a city that contains S's area (the
whole default city) keeps the arena tasks inside the area
(:mod:`urbanarena.tasks.generators.area`). Bad input (unknown city, a split the
city is not the area of, bad numbers) prints ``error: ...`` and exits 2.

``tasks export --city C --tasks T --format hf --out DIR`` writes a suite as a Hugging Face ``datasets``
folder with its dataset card and VLMEvalKit's TSV of the static tasks
(:mod:`urbanarena.runner.hub_export`, docs/harnesses.md).

Register in ``cli/main.py`` (``_register_plugins``)::

    from urbanarena.cli.tasks_cmd import tasks_app
    app.add_typer(tasks_app, name="tasks")
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from urbanarena.safe_paths import out_option
from urbanarena.cli.common import checked_style, fail, render_style_option

from urbanarena.errors import UrbanArenaError

tasks_app = typer.Typer(help="Generate, freeze and export task suites.", no_args_is_help=True)


@tasks_app.callback()
def _tasks() -> None:
    """Generate task suites from a city's own data; export them as datasets."""

SUITES = ("arena", "cityseeker", "urbanground")


class UrbanGroundOracleVerifier:
    """The ``ug-oracle`` as the ladder generator's ``verify``: runs it on a task through the runner's
    continuous loop (:class:`urbanarena.runner.continuous_episode.ContinuousEpisodeRunner`, the family's
    step limit); solved = ended by ``terminate`` with ``sr`` 1. Returns ``{"solved", "steps", "status", "sr"}``."""

    def __init__(self, city, max_steps: int | None = None):
        from urbanarena.agents.urbanground_oracle import UrbanGroundOracle
        from urbanarena.runner.continuous_episode import ContinuousEpisodeRunner
        from urbanarena.tasks.families.urbanground import UrbanGroundFamily

        self.max_steps = int(max_steps or UrbanGroundFamily.default_max_steps)
        self._runner = ContinuousEpisodeRunner(city, UrbanGroundOracle, "ug-oracle")

    def __call__(self, task) -> dict:
        r = self._runner.run(task, 0, "urbanground-v1", self.max_steps)
        sr = r["metrics"].get("sr")
        return {"solved": r["stop_reason"] == "terminate" and sr == 1.0, "steps": int(r["steps"]),
                "status": str(r["stop_reason"]), "sr": sr}


def _generate_urbanground(city: str, per_family: int, seed: int, out: Path, name: Optional[str],
                          families: Optional[str], mapping: Optional[Path], max_steps: Optional[int],
                          condition: Optional[str] = None, split: Optional[str] = None) -> None:
    """``--suite urbanground``: the L1-L5 ladder, every task verified by the ug-oracle; prints per sub-family."""
    from urbanarena.tasks.generators.cityseeker_needs import load_needs
    from urbanarena.tasks.generators.urbanground import generate_urbanground_suite, save_urbanground_suite
    from urbanarena.world.resolve import resolve_city

    try:
        if max_steps is not None and max_steps < 1:
            raise UrbanArenaError("--max-steps must be at least 1")
        if split is not None:
            raise UrbanArenaError("--split applies to --suite arena and cityseeker; the urbanground generator has no "
                                  "split plan (build the city on the area you want)")
        subs = tuple(k.strip() for k in families.split(",") if k.strip()) if families is not None else None
        if subs == ():
            raise UrbanArenaError(f"--families {families!r}: no sub-family named")
        c = resolve_city(city)
        result = generate_urbanground_suite(c, per_family=per_family, seed=seed, subfamilies=subs,
                                            needs=load_needs(mapping), verify=UrbanGroundOracleVerifier(c, max_steps),
                                            name=name, condition=condition)
        path = save_urbanground_suite(result, out)
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    n = len(result.task_file.tasks)
    if result.report.get("conditions"):  # --condition all
        conds = result.report["conditions"]
        count = f"{n} tasks ({result.report['base_tasks']} base tasks x {len(conds)} conditions: {', '.join(conds)})"
    else:
        count = f"{n} tasks"
    typer.echo(f"{path}: suite {result.name}, {count} on {c.name} (seed {seed}; every "
               "task solved by ug-oracle under urbanground-v1)")
    for sub, fr in result.report["families"].items():
        line = f"  {sub:<24} {fr['level']} {fr['produced']}/{fr['requested']}"
        if fr.get("verification_failures"):
            line += f" ({fr['verification_failures']} dropped: oracle failed)"
        if fr.get("shortfall"):
            line += f"; {fr['shortfall']}"
        typer.echo(line)


class GraphOracleVerifier:
    """The graph oracle as the need-suite generator's ``verify``: runs
    :class:`urbanarena.agents.oracle.OracleAgent` on a task through the runner's
    env (:class:`urbanarena.runner.episode.EpisodeRunner`, step limit
    ``max_steps``) under each protocol; a task is solved under a protocol when the
    episode ends by STOP with TC-E = 1 (per stage under ``urbanarena-graph-v1``).

    Returns per protocol ``{"protocol", "solved", "steps", "status", "max_steps", "spl"}``.
    """

    def __init__(self, city, protocols=("cityseeker-v1", "urbanarena-graph-v1"), max_steps: int = 35):
        from urbanarena.agents.oracle import OracleAgent
        from urbanarena.runner.episode import EpisodeRunner

        self.protocols = tuple(protocols)
        self.max_steps = int(max_steps)
        self._runner = EpisodeRunner(city, OracleAgent, "oracle")

    def __call__(self, task) -> list[dict]:
        out = []
        for pid in self.protocols:
            r = self._runner.run(task, 0, pid, self.max_steps)
            m = r["metrics"]
            out.append({"protocol": pid, "solved": r["stop_reason"] == "stop" and m.get("tc_exact") == 1.0,
                        "steps": int(r["steps"]), "status": str(r["stop_reason"]), "max_steps": self.max_steps,
                        "spl": m.get("spl")})
        return out


def _generate_needs(city: str, per_category: int, seed: int, out: Path, split: Optional[str],
                    name: Optional[str], mapping: Optional[Path], max_steps: Optional[int]) -> None:
    """``--suite cityseeker``: generate, verify with the graph oracle, write, print the per-category summary."""
    from urbanarena.tasks.generators.cityseeker_needs import (
        DEFAULT_MAX_STEPS, VERIFY_PROTOCOLS, generate_needs_suite, load_needs, save_needs_suite)
    from urbanarena.world.resolve import resolve_city

    try:
        if per_category < 1:
            raise UrbanArenaError("--per-category must be at least 1")
        if max_steps is not None and max_steps < 1:
            raise UrbanArenaError("--max-steps must be at least 1")
        needs = load_needs(mapping)
        c = resolve_city(city)
        limit = int(max_steps if max_steps is not None else DEFAULT_MAX_STEPS)
        verifier = GraphOracleVerifier(c, VERIFY_PROTOCOLS, limit)
        result = generate_needs_suite(c, per_category=per_category, seed=seed, mapping=needs, name=name, split=split,
                                      verify=verifier, verify_protocols=VERIFY_PROTOCOLS, max_steps=limit)
        path = save_needs_suite(result, out)
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    rep = result.report
    typer.echo(f"{path}: suite {result.name}, {len(result.task_file.tasks)} tasks on {c.name} (seed {seed}, mapping "
               f"{rep['mapping']['file']}; oracle-verified within {rep['max_steps']} steps under "
               f"{', '.join(rep['protocols'])}; default protocol {rep['default_protocol']})")
    for cat, cr in rep["categories"].items():
        if cr.get("unavailable"):
            typer.echo(f"  {cat:<20} unavailable: {cr['unavailable']}")
            continue
        bd = ", ".join(f"{d} {n}" for d, n in cr["by_difficulty"].items())
        typer.echo(f"  {cat:<20} {cr['produced']}/{cr['requested']} ({bd}; {cr['groups_used']} needs)")
        for d, sf in (cr.get("shortfall") or {}).items():
            typer.echo(f"  {'':<20} {d}: {sf['missing']} short: {sf['reason']}")
        for nid, nr in (cr.get("needs") or {}).items():
            if isinstance(nr, dict) and nr.get("unavailable"):
                typer.echo(f"  {'':<20} need {nid}: {nr['unavailable']}")
    cov = rep["coverage"]
    total = {d: sum((cr.get("by_difficulty") or {}).get(d, 0) for cr in rep["categories"].values())
             for d in ("easy", "medium", "hard")}
    typer.echo("difficulty: " + ", ".join(f"{d} {n}" for d, n in total.items())
               + f"; needs covered: {len(cov['with_places'])} of {cov['needs']} have a matching place in this area"
               + (f"; without one (no tasks): {', '.join(cov['without_places'])}" if cov["without_places"] else ""))


def reference_renderer_for(city, render_style: str = "flat"):
    """Hook for ``landmark_image`` reference photos: a callable ``(city, view) -> RGB uint8`` that renders
    ``extra.reference_view`` (position ``x_m``/``y_m``, ``eye_height_m``, ``yaw_deg``, ``pitch_deg``,
    ``hfov_deg``, ``width``, ``height``, ``lighting`` with ``sun_azimuth_deg``/``sun_elevation_deg``,
    optional ``condition``) with the 3D renderer in ``render_style``
    (:func:`urbanarena.render.scene3d.reference.render_reference`), when the city
    can be rendered: it has annotations (an OSM import) and an OpenGL context can be created here.
    Otherwise ``None``, and the suite reports ``landmark_image`` unavailable with the reason."""
    if getattr(city, "annotations", None) is None:
        return None
    from urbanarena.render.scene3d.context import gl_unavailable_reason

    if gl_unavailable_reason() is not None:
        return None
    from urbanarena.render.scene3d.reference import reference_renderer_of

    return lambda c, view: reference_renderer_of(c, render_style).render(view)


def reference_check_for(city, render_style: str = "flat"):
    """The view-distance hook of ``landmark_image`` references
    (:class:`urbanarena.render.scene3d.reference.GoalViewDistance` in ``render_style``), or ``None`` when
    :func:`reference_renderer_for` is ``None``."""
    if reference_renderer_for(city, render_style) is None:
        return None
    from urbanarena.render.scene3d.reference import GoalViewDistance

    return GoalViewDistance(city, render_style)


def goal_share_for(city, render_style: str = "flat"):
    """The goal-share hook of ``landmark_image`` references
    (:class:`urbanarena.render.scene3d.goal_share.GoalShare` in ``render_style``: the photo must show its goal),
    or ``None`` when :func:`reference_renderer_for` is ``None``."""
    if reference_renderer_for(city, render_style) is None:
        return None
    from urbanarena.render.scene3d.goal_share import GoalShare

    return GoalShare(city, render_style)


@tasks_app.command("generate")
def generate(
    city: str = typer.Option(..., "--city", help="CITY: a cached city name, a saved city directory, or KIND:PATH."),
    suite: str = typer.Option("arena", "--suite", help="Suite kind: 'arena' (the seven cityarena families), "
                              "'cityseeker' (CitySeeker-style implicit-need tasks, <city>-needs7-v1) or "
                              "'urbanground' (the UrbanGround L1-L5 ladder in continuous mode, <city>-urbanground-v1)."),
    per_family: int = typer.Option(25, "--per-family", help="Tasks per family (mini 25, standard 100, full 300); "
                                   "urbanground: per sub-family (13)."),
    per_category: int = typer.Option(10, "--per-category", help="cityseeker: tasks per category (7 + two-stop)."),
    mapping: Optional[Path] = typer.Option(None, "--mapping", help="cityseeker: need -> POI mapping JSON "
                                           "(default: the built-in needs_v1.json)."),
    seed: int = typer.Option(0, "--seed", help="Seed (same city + seed + options = same file)."),
    out: Path = typer.Option(..., "--out", parser=out_option, help="Task file to write (JSON)."),
    split: Optional[str] = typer.Option(None, "--split", help="train|val|test: the city must be that split's area "
                                                             "(arena: or contain it; tasks are kept inside)."),
    name: Optional[str] = typer.Option(None, "--name", help="Suite name (default <city>-arena7-v1, cityseeker: "
                                      "<city>-needs7-v1, urbanground: <city>-urbanground-v1)."),
    families: Optional[str] = typer.Option(None, "--families", help="Comma-separated subset of the families "
                                           "(urbanground: of the sub-families, e.g. l2_short_range,l5_road_closure; "
                                           "arena: also population_count, counting people and vehicles, only "
                                           "when named)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Step limit tasks must be solvable in "
                                            "(arena 50, cityseeker 35, urbanground 100: the family's limit, UrbanGround's)."),
    condition: Optional[str] = typer.Option(None, "--condition", help="urbanground: weather / time of day every "
                                            "task is rendered in: clear, cloudy, rain, fog, dusk, night or "
                                            "WEATHER+TIME (e.g. rain+dusk); default clear day. 'all': every task "
                                            "once under each of clear, dusk, night, cloudy and rain (ids "
                                            "<id>@<condition>, extra.base_task_id = <id>)."),
    render_style: str = render_style_option(),
    reference_pictures: Optional[Path] = typer.Option(
        None, "--reference-pictures", help="arena, real-imagery city: a folder or CSV (filename, lat, lon, heading"
        "[, licence, author]) of geotagged 360-degree pictures that are not the city's, whose views of the goal "
        "POIs become landmark_image references (docs/video.md); a Panoramax city searches its STAC instead."),
    confirm_landmark_references: bool = typer.Option(
        False, "--confirm-landmark-references", help="arena, real-imagery city: you have looked at the reference "
        "pictures: their geometry (5-40 m, facing the storefront, no OSM building in the way) is checked, the "
        "storefront's visibility in their pixels is not. Without it landmark_image is refused there."),
) -> None:
    """Generate a task suite on CITY and write it to FILE."""
    if suite != "arena" and (reference_pictures is not None or confirm_landmark_references):
        typer.echo("error: --reference-pictures and --confirm-landmark-references apply to --suite arena only",
                   err=True)
        raise typer.Exit(2)
    if suite == "urbanground":
        _generate_urbanground(city, per_family, seed, out, name, families, mapping, max_steps, condition, split)
        return
    if condition is not None:
        typer.echo("error: --condition applies to --suite urbanground only", err=True)
        raise typer.Exit(2)
    if suite == "cityseeker":
        if families:
            typer.echo("error: --families applies to --suite arena and urbanground only", err=True)
            raise typer.Exit(2)
        _generate_needs(city, per_category, seed, out, split, name, mapping, max_steps)
        return
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.tasks.generators import ALL_KINDS, generate_suite, save_suite
    from urbanarena.tasks.generators.suite import OPT_IN_KINDS
    from urbanarena.world.resolve import resolve_city

    try:
        if suite not in SUITES:
            raise UrbanArenaError(f"--suite {suite!r}: known suites: {', '.join(SUITES)}")
        if per_family < 1:
            raise UrbanArenaError("--per-family must be at least 1")
        if max_steps is not None and max_steps < 1:
            raise UrbanArenaError("--max-steps must be at least 1")
        kinds = tuple(k.strip() for k in families.split(",") if k.strip()) if families else ALL_KINDS
        bad = [k for k in kinds if k not in ALL_KINDS + OPT_IN_KINDS]
        if bad:
            raise UrbanArenaError(f"--families: unknown {', '.join(bad)}; known: {', '.join(ALL_KINDS + OPT_IN_KINDS)}")
        style = checked_style(render_style)
        c = resolve_city(city)
        solver = ArenaOracleSolver(c, max_steps=max_steps)
        check = reference_check_for(c, style) if "landmark_image" in kinds else None
        share = goal_share_for(c, style) if "landmark_image" in kinds else None
        real = real_references_for(c, kinds, families is not None and "landmark_image" in kinds,
                                   reference_pictures, confirm_landmark_references)
        if real is not None:
            check = share = None  # references are real pictures, not renderings
        result = generate_suite(c, per_family=per_family, seed=seed, kinds=kinds, split=split, name=name,
                                solver=solver, reference_renderer=reference_renderer_for(c, style),
                                max_steps=max_steps, reference_check=check, reference_goal_share=share,
                                real_references=real)
        path = save_suite(result, out)
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    rep = result.report
    typer.echo(f"{path}: suite {result.name}, {len(result.task_file.tasks)} tasks on {c.name} "
               f"(seed {seed}{', split ' + split if split else ''}; oracle-verified within {rep['max_steps']} steps "
               f"under {', '.join(rep['protocols'])})")
    for kind, fam in rep["families"].items():
        if fam.get("unavailable"):
            typer.echo(f"  {kind:<18} unavailable: {fam['unavailable']}")
            _echo_reference_pictures(fam)
            continue
        line = f"  {kind:<18} {fam['produced']}/{fam['requested']}"
        for d, e in fam.get("calibration", {}).items():
            if "targets" in e:
                parts = ", ".join(f"{s} {e['means'][s]:.2f} (target {t:g})" for s, t in e["targets"].items())
                line += f"; {d}: {parts}"
        typer.echo(line)
        for d, sf in (fam.get("shortfall") or {}).items():
            typer.echo(f"  {'':<18} {d}: {sf['missing']} short: {sf['reason']}")
        _echo_reference_pictures(fam)


def _echo_reference_pictures(fam: dict) -> None:
    """The line on ``landmark_image``'s real reference pictures (POIs with one, and without: no task)."""
    refs = fam.get("reference_pictures")
    if refs:
        missing = refs["pois_without_reference"]
        typer.echo(f"  {'':<18} real reference pictures: {len(refs['pois_with_reference'])} goal POIs with one, "
                   f"{len(missing)} without (no task made){': ' + ', '.join(missing[:8]) if missing else ''}"
                   f"{' ...' if len(missing) > 8 else ''}; visibility in the pixels not checked (confirmed)")


def real_references_for(city, kinds, named: bool, pictures: Optional[Path], confirmed: bool):
    """The ``landmark_image`` reference finder of a real-imagery city
    (:class:`urbanarena.tasks.generators.real_references.ReferenceFinder`): the pictures of ``pictures``
    (``--reference-pictures``), else on a Panoramax city its STAC searched around each POI; ``None`` when the
    city is not real imagery or landmark_image is not asked (either option then is an error), or when the
    family was not named and nothing was given/confirmed (it is then reported unavailable).

    Raises:
        LandmarkReferencesUnconfirmed: landmark_image named or pictures given without ``confirmed``.
        UrbanArenaError: an option that does not apply; confirmed on a frames/video city without pictures.
        CityFormatError: a bad reference picture (naming the file and CSV line).
    """
    from urbanarena.tasks.generators import real_references as rr
    from urbanarena.tasks.generators.real_imagery import is_real_imagery

    given = pictures is not None or confirmed
    if not is_real_imagery(city):
        if given:
            raise UrbanArenaError("--reference-pictures and --confirm-landmark-references apply to cities of real "
                                  "pictures (city from-frames, from-video, from-panoramax) only")
        return None
    if "landmark_image" not in kinds:
        if given:
            raise UrbanArenaError("--reference-pictures and --confirm-landmark-references apply to landmark_image, "
                                  "which --families leaves out")
        return None
    if not confirmed:
        if pictures is not None or named:
            raise rr.LandmarkReferencesUnconfirmed(rr.REFUSAL)
        return None
    if pictures is not None:
        return rr.ReferenceFinder(city, rr.read_reference_pictures(pictures), confirmed=True)
    if (city.meta.imagery or {}).get("source") == "panoramax":
        return rr.ReferenceFinder(city, searcher=rr.PanoramaxPictures(city), confirmed=True)
    raise UrbanArenaError("--confirm-landmark-references on a frames or video city needs --reference-pictures "
                          "DIR_OR_CSV: geotagged 360-degree pictures other than the city's")


@tasks_app.command("export")
def export(
    city: str = typer.Option(..., "--city", help="CITY: a cached city name, a saved city directory, or KIND:PATH."),
    tasks: str = typer.Option(..., "--tasks", help="TASKS as for `urbanarena run` (default, mini, a task file, KIND:PATH)."),
    fmt: str = typer.Option("hf", "--format", help="Export format: 'hf' (a Hugging Face datasets folder with a "
                            "dataset card, plus VLMEvalKit's TSV of the static tasks; docs/harnesses.md)."),
    out: Path = typer.Option(..., "--out", parser=out_option, help="Folder to write (absent or empty)."),
    panoramas: str = typer.Option("route", "--panoramas", help="Panoramas to include: start (start nodes), route "
                                  "(also reference paths and goals) or none."),
    name: Optional[str] = typer.Option(None, "--name", help="Dataset name in the card (default <city>-<tasks>)."),
    i_hold_the_rights: bool = typer.Option(False, "--i-hold-the-rights", help="Include imagery whose licence "
                                           "forbids redistribution (CitySeeker, StreetLearn): only if you hold the "
                                           "rights to it."),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty --out folder."),
) -> None:
    """Export a task suite (tasks, reference images, panoramas, city metadata) as a dataset folder."""
    from urbanarena.progress import ConsoleProgress
    from urbanarena.runner.hub_export import export_hf
    from urbanarena.tasks.resolve import resolve_task_set
    from urbanarena.world.resolve import resolve_city_source

    try:
        if fmt != "hf":
            raise UrbanArenaError(f"--format {fmt!r}: the only export format is 'hf'")
        c, source = resolve_city_source(city)
        with ConsoleProgress() as progress:  # a frozen suite's first drawing, the panoramas, the task rows
            ts = resolve_task_set(tasks, c, source.directory, progress=progress)
            task_dir = Path(ts.source_files[0]).absolute().parent if ts.source_files else None
            res = export_hf(c, Path(source.directory), list(ts.tasks), task_dir, out, panoramas=panoramas,
                            i_hold_the_rights=i_hold_the_rights, name=name, city_spec=city, tasks_spec=tasks,
                            force=force, progress=progress)
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    splits = ", ".join(f"{s} {n}" for s, n in sorted(res.splits.items()))
    typer.echo(f"{res.out_dir}: {res.rows['tasks']} tasks ({splits}), {res.rows['reference_images']} reference "
               f"images, {res.rows['panoramas']} panoramas, {res.total_bytes / (1 << 20):.2f} MiB; "
               f"datasets.load_dataset({str(res.out_dir)!r}) reads it")
    if res.static_file is not None:
        typer.echo(f"  static table (VLMEvalKit TSV): {res.static_file} ({res.static_rows} rows)")
