"""Node ids as paths (issue 29, items 9 and 13).

* The CitySeeker importer refuses node ids that are not plain file names (``../../../../etc/passwd``, a
  ``/`` or ``\\``, ``.``/``..``) and over-long ids (100,000 characters), in ``connections.json`` and in the
  info CSV, naming the file and the record.
* ``ImagerySource.path_for`` never returns a path that climbs out of the image root: the property test draws
  ids from path pieces and checks, by a second lexical walk written here, that every path it returns lies
  under the root, and that it refuses exactly the ids whose walk would leave it.
* An info-CSV node thousands of km from the others is refused, naming its line and id.
"""

from __future__ import annotations

import os.path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_cityseeker_badinput import POS, bad, edges, info_csv, write
from urbanarena.errors import CityFormatError
from urbanarena.world.imagery import ImagerySource
from urbanarena.world.importers.cityseeker import MAX_NODE_SPREAD_KM, import_city
from urbanarena.world.node_ids import MAX_NODE_ID_CHARS


def _rename(conn, old, new):
    for e in conn:
        for k in ("start_filename", "end_filename"):
            if e[k] == old:
                e[k] = new
    return conn


@pytest.mark.parametrize("bad_id,match", [
    ("../../../../etc/passwd", "not a plain file name"),
    ("sub/n1.jpg", "not a plain file name"),
    ("..\\..\\n1.jpg", "not a plain file name"),
    ("..", "not a plain file name"),
    ("x" * 100_000, f"100000 characters (at most {MAX_NODE_ID_CHARS})"),
])
def test_cityseeker_refuses_path_ids(tmp_path, bad_id, match):
    d = write(tmp_path / "c", conn=_rename(edges(), "n1.jpg", bad_id), qs=False)
    err = bad(CityFormatError, lambda: import_city(d), d / "connections.json", "[edge 0]", match)
    assert len(str(err)) < 1000  # an over-long id is cut in the message


def test_cityseeker_info_csv_refuses_path_ids(tmp_path):
    d = write(tmp_path / "c", qs=False, info=info_csv(['../x.jpg,114.1801,22.3002,2019,5,12.0,"[1.0]"']))
    bad(CityFormatError, lambda: import_city(d), d / "Tiny_1_info.csv", "[line 7]", "not a plain file name")


def test_info_csv_far_node_refused(tmp_path):
    far = info_csv().replace(f"n5.jpg,{POS['n5.jpg'][0]},{POS['n5.jpg'][1]}", "n5.jpg,114.18070,67.0")  # ~5,000 km N
    d = write(tmp_path / "c", qs=False, info=far)
    err = bad(CityFormatError, lambda: import_city(d), d / "Tiny_1_info.csv", "[line 6]", "node n5.jpg", "km from")
    km = float(str(err).split(" lies ")[1].split(" km")[0].replace(",", ""))
    assert 4900 < km < 5100  # (67 - 22.3) degrees of latitude x 111.2 km = 4,970 km
    assert MAX_NODE_SPREAD_KM < km


def test_info_csv_near_nodes_pass(tmp_path):
    d = write(tmp_path / "c", qs=False, info=info_csv())
    assert import_city(d).graph.number_of_nodes() == 5


_piece = st.sampled_from(["a", "b.jpg", "..", ".", "", "/", "\\", "c/..", "../", "x" * 5, "é", "d\\..\\.."])


def _stays_inside(rel: str) -> bool:
    """A second lexical rule: walk the parts (both separators); inside when the depth never drops below 0 and
    the path is not absolute."""
    if rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        return False
    depth = 0
    for part in rel.replace("\\", "/").split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in ("", "."):
            depth += 1
    return True


@settings(max_examples=500, deadline=None)
@given(st.lists(_piece, min_size=1, max_size=6).map("".join), st.sampled_from(["{node}", "{node}.jpg", "p/{node}"]))
def test_path_for_never_leaves_root(node, pattern):
    src = ImagerySource(root="/img/root", pattern=pattern)
    rel = pattern.format(node=node)
    parts = rel.replace("\\", "/").split("/")
    refused = rel == "" or ".." in parts or rel.startswith(("/", "\\"))  # the documented rule, restated
    try:
        p = src.path_for(node)
    except CityFormatError as e:
        assert refused and "not confined" in str(e), rel
        return
    assert not refused and _stays_inside(rel), rel  # whatever it returns stays inside, by the second walk
    norm = os.path.normpath(str(p))
    assert norm == "/img/root" or norm.startswith("/img/root/"), norm


def test_path_for_files_map_confined_too(tmp_path):
    src = ImagerySource(root=str(tmp_path), files={"n": "../../etc/passwd"})
    with pytest.raises(CityFormatError, match="not confined"):
        src.path_for("n")
    assert ImagerySource(root=str(tmp_path), files={"n": "a/b.jpg"}).path_for("n") == tmp_path / "a" / "b.jpg"
