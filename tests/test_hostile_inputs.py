"""Issue 18, items 4-6: inputs that used to crash with a traceback or pass silently are refused with a
typed error naming the file and record (or, for a read-only RUN_DIR, read correctly)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner_util import write_inputs
from test_cityseeker_badinput import edges, questions
from urbanarena.agents.clients.errors import ModelSpecError
from urbanarena.agents.clients.spec import parse_model_spec
from urbanarena.cli.main import app
from urbanarena.errors import CityFormatError, StoreError, TaskFormatError
from urbanarena.runner.store import Store
from urbanarena.tasks.resolve import resolve_task_set
from urbanarena.web.auth import AuthError, ParticipantTokens, token_bits, token_problem
from urbanarena.world.city_io import load_city, save_city
from urbanarena.world.importers.cityseeker import import_city as import_cityseeker
from urbanarena.world.importers.touchdown import import_city as import_touchdown
from urbanarena.world.node_ids import node_id_problem

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def write_cityseeker(d: Path, es, qs) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "connections.json").write_text(json.dumps(es, ensure_ascii=False), encoding="utf-8")
    (d / "question.json").write_text(json.dumps(qs, ensure_ascii=False), encoding="utf-8")
    return d


def rename(es, qs, old: str, new: str):
    """Rename node ``old`` everywhere in the tiny CitySeeker city (edges and questions)."""
    for e in es:
        for k in ("start_filename", "end_filename"):
            if e[k] == old:
                e[k] = new
    for q in qs:
        for k in ("from", "to"):
            if q[k] == old:
                q[k] = new
        for r in [q["complete_route"]] + [q[s]["route"] for s in ("stage1_route", "stage2_route") if s in q]:
            for p in r:
                if p["filename"] == old:
                    p["filename"] = new
        for s in ("stage1_route", "stage2_route"):
            if s in q:
                for k in ("from", "to"):
                    if q[s][k] == old:
                        q[s][k] = new
    return es, qs


# ------------------------------------------------------------------ item 4: typed errors
def test_huge_edge_distance_is_a_typed_error_naming_the_edge(tmp_path):
    es, qs = edges(), questions()
    es[3]["edge_distance"] = 1e308  # was pyproj CRSError from world/geo.py
    with pytest.raises(CityFormatError) as ei:
        import_cityseeker(write_cityseeker(tmp_path / "c", es, qs))
    assert ei.value.path.endswith("connections.json") and ei.value.record == "edge 3"
    assert "edge_distance 1e+308 outside [0, 10000]" in ei.value.reason


def test_edge_distances_that_push_positions_off_the_map_are_a_typed_error(tmp_path):
    # every edge within the bound, but a chain of 30 edges of 9000 units northwards from an anchor at 84.9
    # degrees leaves EPSG:3857 (|y| <= pi x 6378137): the reconstruction must say so, not hand NaN to pyproj
    def e(a, b, az):
        return {"start_filename": a, "start_heading": 0.0, "start_walkable_headings": [0.0, 180.0], "end_filename": b,
                "end_heading": 0.0, "end_walkable_headings": [0.0, 180.0], "edge_azimuth": az, "edge_distance": 9000.0}

    es = []
    for k in range(30):
        es += [e(f"c{k}", f"c{k + 1}", 0.0), e(f"c{k + 1}", f"c{k}", 180.0)]
    q = {**questions()[0], "from": "c0", "to": "c0", "complete_route": [{"filename": "c0", "latitude": 84.9,
                                                                           "longitude": 10.0}]}
    with pytest.raises(CityFormatError) as ei:
        import_cityseeker(write_cityseeker(tmp_path / "c", es, [q]))
    assert ei.value.path.endswith("connections.json") and ei.value.record.startswith("edge ")
    assert "outside the Web Mercator range" in ei.value.reason


def test_model_spec_port_out_of_range_is_a_spec_error():
    for port in ("99999", "0", "65536"):
        with pytest.raises(ModelSpecError, match=f"port {port}, outside 1-65535"):
            parse_model_spec(f"openai-compatible:http://127.0.0.1:{port}/v1:qwen")
    assert parse_model_spec("openai-compatible:http://127.0.0.1:65535/v1:qwen").base_url == "http://127.0.0.1:65535/v1"


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy")
    city_dir, task_path, city, tf = write_inputs(root, n=3, n_tasks=2)
    return root, city_dir, task_path, city, tf


def _run(toy, out, *extra):
    _, city_dir, task_path, _, _ = toy
    return runner.invoke(app, [str(a) for a in ["run", "--city", city_dir, "--tasks", task_path, "--out", out, *extra]])


def _one_error_line(r) -> str:
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.output, r.output
    return lines[0]


def test_seed_base_past_the_store_range_is_refused_before_run_dir(toy, tmp_path):
    out = tmp_path / "run"
    line = _one_error_line(_run(toy, out, "--agent", "random", "--seeds", 2, "--seed-base", 2**63 - 1))
    assert "the last seed must be <= 9223372036854775807" in line and not out.exists()
    r = _run(toy, out, "--agent", "random", "--seeds", 1, "--seed-base", 2**63 - 1, "--max-steps", 2)
    assert r.exit_code == 0, r.output  # the largest seed itself is stored
    with Store(out / "episodes.sqlite", readonly=True) as st:
        assert {row["seed"] for row in st.rows()} == {2**63 - 1}


@pytest.mark.parametrize("value, shown", [("-1", "timeout_s=-1"), ("1e309", "timeout_s=inf"), ("0", "timeout_s=0")])
def test_bad_timeout_is_refused_in_the_preflight(toy, tmp_path, value, shown):
    out = tmp_path / "run"
    line = _one_error_line(_run(toy, out, "--agent", "vlm-cityseeker", "--model",
                                "openai-compatible:http://127.0.0.1:9/v1:m", "-p", f"timeout_s={value}"))
    assert f"-p {shown}: must be " in line and ("must be >= 0.1" in line or "must be a finite number" in line)
    assert not out.exists()


# ------------------------------------------------------------------ item 5: garbage refused
@pytest.mark.parametrize("bad", ["n1\x00.jpg", "n1\u202e.jpg", "n1\u2066x", "n1\n.jpg", "n1\x7f", "n1\u2028"])
def test_node_ids_with_control_or_bidi_characters_are_refused(tmp_path, bad):
    es, qs = rename(edges(), questions(), "n1.jpg", bad)
    with pytest.raises(CityFormatError) as ei:
        import_cityseeker(write_cityseeker(tmp_path / "c", es, qs))
    assert ei.value.path.endswith("connections.json") and ei.value.record == "edge 0"
    assert f"U+{ord(next(c for c in bad if node_id_problem(c))):04X}" in ei.value.reason


@pytest.mark.parametrize("ok", ["n1 \U0001f3e6.jpg", "\u9280\u884c.jpg", "\U0001f469\u200d\U0001f4bb", "caf\u00e9\ufe0f"])
def test_other_unicode_node_ids_stay_valid_and_survive_save_and_load(tmp_path, ok):
    es, qs = rename(edges(), questions(), "n1.jpg", ok)
    city = import_cityseeker(write_cityseeker(tmp_path / "c", es, qs))
    assert ok in city
    assert ok in load_city(save_city(city, tmp_path / "saved"))


def test_touchdown_and_saved_city_refuse_bidi_ids(tmp_path):
    d = tmp_path / "td"
    d.mkdir()
    (d / "nodes.txt").write_text("a,0,40.0,-73.0\nb\u202ec,0,40.0001,-73.0\n", encoding="utf-8")
    (d / "links.txt").write_text("a,0,b\u202ec\nb\u202ec,180,a\n", encoding="utf-8")
    with pytest.raises(CityFormatError) as ei:
        import_touchdown(d)
    assert ei.value.path.endswith("nodes.txt") and ei.value.record == "line 2" and "U+202E" in ei.value.reason
    # a saved city edited by hand
    es, qs = edges(), questions()
    saved = save_city(import_cityseeker(write_cityseeker(tmp_path / "c", es, qs)), tmp_path / "saved")
    gp = saved / "graph.json.gz"
    rec = json.loads(gzip.decompress(gp.read_bytes()))
    rec["nodes"][2]["id"] = "x\x00y"
    gp.write_bytes(gzip.compress(json.dumps(rec).encode()))
    with pytest.raises(CityFormatError) as ei:
        load_city(saved, verify_hash=False)
    assert ei.value.path.endswith("graph.json.gz") and ei.value.record == "node 2" and "U+0000" in ei.value.reason


def test_graph_task_without_a_goal_is_refused(toy, tmp_path):
    _, _, task_path, city, _ = toy
    raw = json.loads(Path(task_path).read_text())
    raw["tasks"][1]["goals"] = []
    p = tmp_path / "t.json"
    p.write_text(json.dumps(raw))
    with pytest.raises(TaskFormatError) as ei:
        resolve_task_set(str(p), city)
    assert ei.value.path == str(p) and ei.value.record == f"task 1 ({raw['tasks'][1]['task_id']})"
    assert "needs a goal with a node (goals is empty)" in ei.value.reason
    raw["tasks"][1]["goals"] = [{"label": "a bank"}]  # a goal, but no node to reach
    p.write_text(json.dumps(raw))
    with pytest.raises(TaskFormatError, match="goals is without a node"):
        resolve_task_set(str(p), city)


# ------------------------------------------------------------------ item 6: read-only RUN_DIR, tokens
def _as_unprivileged(cmd: list[str]) -> list[str] | None:
    """``cmd`` run so that file modes bind (root ignores them): directly when not root, else inside a new user
    namespace (``unshare --user``: the process keeps uid 0 on disk but loses its capabilities)."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("unshare") is None:
        return None
    probe = subprocess.run(["unshare", "--user", "true"], capture_output=True)
    return ["unshare", "--user", *cmd] if probe.returncode == 0 else None


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "urbanarena.cli.main", *args]


def test_summary_export_report_on_a_read_only_run_dir(toy, tmp_path):
    run = tmp_path / "run"
    assert _run(toy, run, "--agent", "random", "--seeds", 2, "--max-steps", 3).exit_code == 0
    if _as_unprivileged(["true"]) is None:
        pytest.skip("running as root without user namespaces: a read-only directory cannot be made to bind")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    expected = runner.invoke(app, ["summary", str(run), "--json"]).stdout
    out = tmp_path / "exports"
    out.mkdir()
    os.chmod(run, 0o555)
    try:
        r = subprocess.run(_as_unprivileged(_cli("summary", str(run), "--json")), capture_output=True, text=True,
                           env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["episodes"] == json.loads(expected)["episodes"] == 4
        r = subprocess.run(_as_unprivileged(_cli("export", str(run), "--format", "csv", "--out", str(out / "e.csv"))),
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert len((out / "e.csv").read_text().splitlines()) == 5
        r = subprocess.run(_as_unprivileged(_cli("report", str(run), "--out", str(out / "r.html"))),
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        # a pending write-ahead log cannot be read without writing: the message says the directory is read-only
        os.chmod(run, 0o755)
        (run / "episodes.sqlite-wal").write_bytes(b"\0" * 32)
        os.chmod(run, 0o555)
        r = subprocess.run(_as_unprivileged(_cli("summary", str(run))), capture_output=True, text=True, env=env,
                           timeout=120)
        assert r.returncode == 2 and "read-only" in r.stderr and "not a run store" not in r.stderr, r.stderr
    finally:
        os.chmod(run, 0o755)


def test_immutable_read_of_a_store_gives_every_row(toy, tmp_path):
    """The read-only fallback itself (runs as root too, where directory modes do not bind)."""
    import sqlite3

    run = tmp_path / "run"
    assert _run(toy, run, "--agent", "random", "--seeds", 3, "--max-steps", 2).exit_code == 0
    db = run / "episodes.sqlite"
    plain = sqlite3.connect(db)
    n = plain.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    plain.close()
    st = Store.__new__(Store)
    st.path = db
    conn = st._open_unwritable(sqlite3.OperationalError("unable to open database file"))
    assert conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] == n == 6
    conn.close()
    (run / "episodes.sqlite-wal").write_bytes(b"\0" * 32)
    with pytest.raises(StoreError, match="read-only, and the run store has a pending write-ahead log"):
        st._open_unwritable(sqlite3.OperationalError("unable to open database file"))


def test_store_on_a_writable_dir_still_reports_a_non_store(tmp_path):
    (tmp_path / "episodes.sqlite").write_bytes(b"not sqlite at all" * 10)
    with pytest.raises(StoreError, match="not a run store"):
        Store(tmp_path / "episodes.sqlite", readonly=True)


@pytest.mark.parametrize("token, why", [
    ("aaaaaaaaaaaaaaaa", "too weak: 16 characters carry 64 bits"),
    ("a" * 40, "trivially patterned"),
    ("abcdefghijklmnopqrstuvwxyz", "too weak"),  # one run of 26: log2(26) + 25 bits
    ("Ab3_Ab3_Ab3_Ab3_Ab3_Ab3_Ab3_", "trivially patterned"),
    ("0123456789abcdef" * 2, "trivially patterned"),
    ("deadbeefdeadbeef0123", "too weak: 20 characters carry 80 bits"),  # hex: 4 bits a character
    ("token with spaces and more than 22", "must consist of"),
])
def test_weak_tokens_are_refused(token, why):
    assert why in token_problem(token)


def test_random_tokens_pass_and_token_files_are_checked(tmp_path):
    import secrets

    import base64
    import math
    import random

    # "G" * 22: upper case only (26 symbols), one run of 22: log2(26) + 21 x 1 bit; "A" * 22: hexadecimal, 4 bits each
    assert token_bits("G" * 22) == pytest.approx(math.log2(26) + 21) and token_bits("A" * 22) == 88
    assert token_bits("0f" * 16) == 128 and token_bits("7" * 39) > 128
    assert token_bits("Ab" * 11) == 22 * 6  # both cases: base64's 64 symbols, no run (A->b is not a step)
    # generated tokens pass: 2000 of secrets.token_urlsafe(16)'s and token_hex(16)'s form, from a seeded generator,
    # carry 128 bits by the alphabet estimate, and the first 500 of each pass every check (the zxcvbn one takes
    # milliseconds a token) (a random 22-character token lacks a letter case, and is refused, with a chance of
    # 2e-5: regenerate it)
    rng = random.Random(29)
    urlsafe = [base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode() for _ in range(2000)]
    hexes = [rng.randbytes(16).hex() for _ in range(2000)]
    assert all(len(t) == 22 and token_bits(t) >= 128 for t in urlsafe) and all(token_bits(t) >= 128 for t in hexes)
    assert all(token_problem(t) is None for t in urlsafe[:500] + hexes[:500])
    assert all(token_problem(secrets.token_urlsafe(32)) is None for _ in range(200))  # what play generates
    f = tmp_path / "tokens.tsv"
    f.write_text("alice\taaaaaaaaaaaaaaaa\n")
    with pytest.raises(AuthError, match=r"tokens.tsv: the token of participant 'alice' is too weak"):
        ParticipantTokens.load_or_issue(f, [])
    good = secrets.token_urlsafe(16)
    f.write_text(f"alice\t{good}\n")
    reg, toks = ParticipantTokens.load_or_issue(f, [])
    assert toks == {"alice": good} and reg.participant_for(good) == "alice"


# ------------------------------------------------------------------ what the property-based tests found
def test_integer_beyond_float_range_is_a_typed_error(tmp_path, toy):
    es = edges()
    es[2]["edge_distance"] = 10**400  # was OverflowError from float()
    with pytest.raises(CityFormatError, match=r"\[edge 2\]: edge_distance is not a finite number"):
        import_cityseeker(write_cityseeker(tmp_path / "c", es, questions()))
    saved = save_city(import_cityseeker(write_cityseeker(tmp_path / "ok", edges(), questions())), tmp_path / "saved")
    gp = saved / "graph.json.gz"
    rec = json.loads(gzip.decompress(gp.read_bytes()))
    rec["nodes"][1]["lat"] = 10**400
    gp.write_bytes(gzip.compress(json.dumps(rec).encode()))
    with pytest.raises(CityFormatError, match=r"graph.json.gz \[node n[0-9].jpg\]: lat/lon missing, not finite"):
        load_city(saved, verify_hash=False)
    gp.write_bytes(gzip.compress(b"42"))  # not an object at all (was AttributeError)
    with pytest.raises(CityFormatError, match="expected an object with 'nodes' and 'edges' lists"):
        load_city(saved, verify_hash=False)


def test_map2seq_heading_beyond_float_range_is_a_typed_error(tmp_path):
    from test_fuzz_importers import TD_LINKS, TD_NODES

    (tmp_path / "nodes.txt").write_text("\n".join(",".join(r) for r in TD_NODES) + "\n")
    (tmp_path / "links.txt").write_text("\n".join(",".join(r) for r in TD_LINKS) + "\n")
    city = import_touchdown(tmp_path)
    p = tmp_path / "m.jsonl"
    p.write_text(json.dumps({"id": 7, "instructions_id": 1, "route_panoids": ["a", "b"], "navigation_text": "x",
                             "start_heading": 10**400}) + "\n")
    with pytest.raises(TaskFormatError, match=r"m.jsonl \[line 1\]: start_heading 1000+ is outside \[0, 360\] degrees"):
        resolve_task_set(f"map2seq:{p}", city)


def test_osm_street_thousands_of_km_long_is_refused_not_sampled(tmp_path):
    # libosmium reads lat="1e308" as 0: the street then runs 6,700 km and was sampled every 10 m (a hang)
    from urbanarena.world.importers.osm import import_city as import_osm

    src = (REPO / "tests" / "data" / "osm_build_tiny.osm").read_text()
    p = tmp_path / "bad.osm"
    p.write_text(src.replace('<node id="101" version="1" lat="60.1700000"', '<node id="101" version="1" lat="1e308"'))
    with pytest.raises(CityFormatError) as ei:
        import_osm(p)
    assert ei.value.path == str(p) and ei.value.record == "way 1001" and "longer than 200 km" in ei.value.reason


def test_frames_manifest_with_unusable_file_names(tmp_path):
    from urbanarena.world.importers.frames import import_frames

    for name in ("x" * 5000 + ".jpg", "a\x00b.jpg"):
        m = tmp_path / "m.csv"
        m.write_text(f"filename,lat,lon\n{name},60.17,24.94\n")
        with pytest.raises(CityFormatError) as ei:
            import_frames([], csv_path=m)
        assert ei.value.path == str(m) and ei.value.record == "line 2" and "unusable" in ei.value.reason


def test_panoramax_items_with_wrongly_typed_members_read_as_absent():
    from test_fuzz_importers import PMX_ITEM
    from urbanarena.world.importers.panoramax.build import validate_picture
    from urbanarena.world.importers.panoramax.client import PanoramaxError, parse_item

    api = "https://pmx.invalid/api"
    item = json.loads(json.dumps(PMX_ITEM))
    item["properties"]["pers:interior_orientation"]["sensor_array_dimensions"] = [[1], "x"]  # was TypeError
    item["assets"]["hd"]["file:size"] = 1e308  # was OverflowError
    item["links"] = 5  # was AttributeError
    item["collection"] = ["unhashable"]  # was TypeError
    pic = parse_item(item, api)
    assert pic.sensor_px is None and pic.size_bytes is None and pic.sequence_id is None
    assert pic.source_url == f"{api}/collections/None/items/{PMX_ITEM['id']}"
    item["geometry"] = [1, 2]
    assert validate_picture(parse_item(item, api), check_image=False)[0] == "bad_position"
    with pytest.raises(PanoramaxError, match="without an id"):
        parse_item({**PMX_ITEM, "id": ["x"]}, api)
    assert validate_picture(parse_item({**PMX_ITEM, "id": "p\u202eq"}, api), check_image=False)[0] == "bad_id"


def test_json_nested_past_the_recursion_limit_is_a_typed_error(tmp_path, toy):
    deep = b"[" * 50_000 + b"]" * 50_000  # json raises RecursionError, not JSONDecodeError
    es = tmp_path / "cs"
    es.mkdir()
    (es / "connections.json").write_bytes(deep)
    with pytest.raises(CityFormatError, match=r"connections.json: JSON nested too deeply"):
        import_cityseeker(es)
    _, _, _, city, _ = toy
    tf = tmp_path / "t.json"
    tf.write_bytes(deep)
    with pytest.raises(TaskFormatError, match=r"t.json: JSON nested too deeply"):
        resolve_task_set(str(tf), city)
    saved = save_city(city, tmp_path / "saved")
    (saved / "graph.json.gz").write_bytes(gzip.compress(deep))
    with pytest.raises(CityFormatError, match=r"graph.json.gz: JSON nested too deeply"):
        load_city(saved)
    m = tmp_path / "m.jsonl"
    m.write_bytes(deep + b"\n")
    with pytest.raises(TaskFormatError, match=r"m.jsonl \[line 1\]: JSON nested too deeply"):
        resolve_task_set(f"map2seq:{m}", city)


def test_saved_city_with_infinity_in_any_attribute_is_refused(tmp_path):
    saved = save_city(import_cityseeker(write_cityseeker(tmp_path / "c", edges(), questions())), tmp_path / "saved")
    gp = saved / "graph.json.gz"
    rec = json.loads(gzip.decompress(gp.read_bytes()))
    rec["edges"][0]["edge_distance_mercator"] = float("inf")  # not a core attribute: loaded, then unsavable
    gp.write_bytes(gzip.compress(json.dumps(rec).encode()))
    with pytest.raises(CityFormatError, match=r"graph.json.gz: unreadable graph file: non-finite number Infinity"):
        load_city(saved, verify_hash=False)


@pytest.mark.parametrize("key, value", [("origin", {"lat": "x", "lon": 0}), ("origin", {"lat": 1e308, "lon": 0}),
                                        ("origin", {"lat": None, "lon": 0}), ("name", 5), ("extra", [1])])
def test_saved_city_metadata_of_the_wrong_shape_is_refused(tmp_path, key, value):
    # were ValueError / TypeError / pyproj CRSError from the local frame
    saved = save_city(import_cityseeker(write_cityseeker(tmp_path / "c", edges(), questions())), tmp_path / "saved")
    meta = json.loads((saved / "city.json").read_text())
    meta[key] = value
    (saved / "city.json").write_text(json.dumps(meta))
    with pytest.raises(CityFormatError) as ei:
        load_city(saved, verify_hash=False)
    assert ei.value.path.endswith("city.json") and ei.value.record == key


def test_saved_city_without_nodes_is_refused(tmp_path):
    saved = save_city(import_cityseeker(write_cityseeker(tmp_path / "c", edges(), questions())), tmp_path / "saved")
    (saved / "graph.json.gz").write_bytes(gzip.compress(b'{"nodes": [], "edges": []}'))
    with pytest.raises(CityFormatError, match=r"graph.json.gz \[nodes\]: the graph has no nodes"):
        load_city(saved, verify_hash=False)


def test_play_refuses_a_weak_token_file_before_serving(tmp_path):
    f = tmp_path / "tokens.tsv"
    f.write_text("alice\taaaaaaaaaaaaaaaa\n")  # 16 characters: accepted before
    f.chmod(0o600)  # owner-only: no readable-file warning besides the error
    out = tmp_path / "play"
    r = runner.invoke(app, ["play", "--city", str(tmp_path / "nowhere"), "--tasks", "default", "--tokens", str(f),
                            "--out", str(out)])
    line = _one_error_line(r)
    assert "the token of participant 'alice' is too weak: 16 characters carry 64 bits" in line
    assert not out.exists() and f.read_text() == "alice\taaaaaaaaaaaaaaaa\n"  # the file is not rewritten


def test_play_on_a_busy_port_exits_2_before_printing_tokens_or_writing(tmp_path):
    """Issue 29 item 14: the port is checked first; nothing is prepared, printed or written."""
    import socket

    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    out, tokens = tmp_path / "play", tmp_path / "tokens.tsv"
    try:
        r = runner.invoke(app, ["play", "--city", str(tmp_path / "nowhere"), "--tasks", "default", "--port", str(port),
                                "--tokens", str(tokens), "--out", str(out)])
    finally:
        busy.close()
    assert r.exit_code == 2
    line = _one_error_line(r)
    assert f"--port {port} on 127.0.0.1 is already in use" in line
    assert "token=" not in r.output and not out.exists() and not tokens.exists()
