"""The photo style's people and vehicles drawn with their own textures (render/scene3d/photo_model_textures.py):
the texture array's layout against the GL sampler (a numpy twin), the albedo quotient by hand, the per-corner
texture data a model keeps (bake, cache round trip), the catalogue's layer numbering, and the mesh's (u, v,
layer, texel) rows following mirrored corners."""

from __future__ import annotations

import numpy as np
import pytest

from urbanarena.render.scene3d import photo_model_textures as PMT


def _png(path, rgb):
    from PIL import Image

    Image.fromarray(np.asarray(rgb, np.uint8)).save(path)
    return path


def test_layers_put_obj_v_up_and_keep_each_image(tmp_path):
    # top half red, bottom half blue in the image: OBJ v = 0.25 (lower half) is blue, v = 0.75 red
    img = np.zeros((8, 8, 3), np.uint8)
    img[:4] = (255, 0, 0)
    img[4:] = (0, 0, 255)
    green = np.zeros((4, 4, 3), np.uint8)
    green[:] = (0, 200, 0)
    px = PMT.layer_pixels([_png(tmp_path / "a.png", img), _png(tmp_path / "b.png", green)], size=8)
    assert px.shape == (2, 8, 8, 4) and (px[..., 3] == 255).all()
    s = PMT.sample_layers(px, np.array([[0.5, 0.25, 0.0], [0.5, 0.75, 0.0], [0.3, 0.3, 1.0], [0.3, 0.3, -1.0]]))
    assert s[0] == pytest.approx([0, 0, 1], abs=0.02)
    assert s[1] == pytest.approx([1, 0, 0], abs=0.02)
    assert s[2] == pytest.approx([0, 200 / 255, 0], abs=0.01)
    assert s[3] == pytest.approx([1, 1, 1])                       # layer -1: untextured


def test_sample_twin_is_bilinear_and_repeats():
    px = np.zeros((1, 2, 2, 4), np.uint8)
    px[0, 0, 0, :3] = 0        # row 0 (v near 0), column 0
    px[0, 0, 1, :3] = 100
    px[0, 1, 0, :3] = 200
    px[0, 1, 1, :3] = 255
    # texel centres at u, v = 0.25, 0.75; halfway between all four: their mean
    s = PMT.sample_layers(px, np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.0], [1.25, 0.25, 0.0], [0.0, 0.25, 0.0]]))
    assert s[0, 0] == pytest.approx((0 + 100 + 200 + 255) / 4 / 255)
    assert s[1, 0] == pytest.approx(0.0)
    assert s[2, 0] == pytest.approx(0.0)                           # u repeats
    assert s[3, 0] == pytest.approx(50 / 255)                      # u = 0 halfway between column 1 (wrapped) and 0


def test_gl_texture_array_samples_as_the_twin(tmp_path):
    from urbanarena.render.scene3d.context import current, gl_context, gl_unavailable_reason

    why = gl_unavailable_reason()
    if why:
        pytest.skip(why)
    rng = np.random.default_rng(3)
    paths = [_png(tmp_path / f"{k}.png", rng.integers(0, 256, (16, 16, 3))) for k in range(3)]
    px = PMT.layer_pixels(paths, size=16)
    uvl = np.column_stack([rng.uniform(-1, 2, 64), rng.uniform(-1, 2, 64), rng.integers(0, 3, 64)]).astype("f4")
    ctx = gl_context()
    with current(ctx):
        tex = PMT.model_texture_array(ctx, paths, size=16)
        prog = ctx.program(vertex_shader="""#version 330
            in vec3 in_uvl; out vec3 v_uvl;
            void main() { v_uvl = in_uvl; gl_Position = vec4((float(gl_VertexID) + 0.5) / 32.0 - 1.0, 0.0, 0.0, 1.0);
                          gl_PointSize = 1.0; }""", fragment_shader="""#version 330
            uniform sampler2DArray model_tex; in vec3 v_uvl; out vec4 f;
            void main() { f = textureLod(model_tex, v_uvl, 0.0); }""")
        prog["model_tex"].value = 0
        fbo = ctx.framebuffer(color_attachments=[ctx.texture((64, 1), 4, dtype="f4")])
        buf = ctx.buffer(uvl.tobytes())
        vao = ctx.vertex_array(prog, [(buf, "3f", "in_uvl")])
        fbo.use()
        fbo.clear()
        tex.use(0)
        import moderngl

        vao.render(moderngl.POINTS)
        got = np.frombuffer(fbo.read(components=4, dtype="f4"), "f4").reshape(64, 4)[:, :3]
        for o in (vao, buf, fbo, prog, tex):
            o.release()
    want = PMT.sample_layers(px, uvl)
    assert np.abs(got - want).max() < 2.5 / 255   # GL's filter weights have 8 bits


def test_albedo_quotient_by_hand():
    col = np.array([[0.5, 0.5, 0.5], [0.2, 0.4, 0.6], [1.0, 1.0, 1.0]])
    sample = np.array([[0.4, 0.4, 0.4], [0.3, 0.3, 0.3], [0.5, 0.5, 0.5]])
    texel = np.array([[0.2, 0.2, 0.2], [0.3, 0.3, 0.3], [0.0, 0.0, 0.0]])
    got = PMT.textured_albedo(col, sample, texel)
    assert got[0] == pytest.approx([1.0, 1.0, 1.0])        # 0.5 * 0.4 / 0.2
    assert got[1] == pytest.approx([0.2, 0.4, 0.6])        # the texel as baked: the colour itself
    assert got[2] == pytest.approx([8.0, 8.0, 8.0])        # 0.5 / 0.03 = 16.7 capped at MAX_GAIN
    vs, fs = PMT.program_sources()
    assert "in vec3 in_uvl;" in vs and "in vec3 in_texel;" in vs and "model_texel()" in fs
    assert f"{PMT.MAX_GAIN:.6f}" in fs and f"{PMT.MIN_TEXEL:.6f}" in fs


def _tiny_obj(tmp_path):
    """Two triangles: one textured (material ``t``, a 2 x 2 texture), one plain (``p``, Kd 0.5)."""
    tex = np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [255, 255, 255]]], np.uint8)
    _png(tmp_path / "t.png", tex)
    (tmp_path / "m.mtl").write_text("newmtl t\nKd 1 1 1\nmap_Kd t.png\nnewmtl p\nKd 0.5 0.5 0.5\n")
    (tmp_path / "m.obj").write_text(
        "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 0 0 1\nvt 0.25 0.25\nvt 0.75 0.25\nvt 0.25 0.75\n"
        "usemtl t\nf 1/1 2/2 3/3\nusemtl p\nf 2 4 5\n")
    return tmp_path / "m.obj", tex.astype(np.float32) / 255.0


def test_bake_keeps_uv_layer_and_the_baked_sample(tmp_path):
    from urbanarena.render.scene3d.photo_models import UV_PULL, _sample, bake_textured, read_mtl, read_obj

    obj, tex = _tiny_obj(tmp_path)
    P, UV, mats, libs = read_obj(obj)
    col, paint, texel, idx, textures = bake_textured(UV, mats, read_mtl(tmp_path / libs[0]))
    assert [p.name for p in textures] == ["t.png"] and idx.tolist() == [0, -1]
    u = UV[0]
    pulled = (1 - UV_PULL) * u + UV_PULL * u.mean(axis=0)
    assert texel[0] == pytest.approx(_sample(tex, pulled), abs=1e-6)
    assert col[0] == pytest.approx(texel[0])                   # Kd 1
    # the first corner (uv 0.25, 0.25 pulled towards the centroid): the image's lower-left texel is blue
    assert texel[0][0][2] > 0.5
    assert (texel[1] == 1).all() and col[1] == pytest.approx(np.full((3, 3), 0.5))


def test_load_model_keeps_texture_data_through_the_cache(tmp_path):
    from urbanarena.render.scene3d.photo_models import load_model

    obj, _ = _tiny_obj(tmp_path)
    a = load_model(obj, "height", 0.0, cache_dir=tmp_path / "cache")
    b = load_model(obj, "height", 0.0, cache_dir=tmp_path / "cache")   # from the .npz
    assert list((tmp_path / "cache").glob("*.npz"))
    for m in (a, b):
        assert m.uv.shape == (6, 2) and m.tex.tolist() == [0, 0, 0, -1, -1, -1]
        assert m.textures == (str(tmp_path / "t.png"),)
    assert np.array_equal(a.uv, b.uv) and np.array_equal(a.texel, b.texel) and np.array_equal(a.tex, b.tex)


def _model(tex, textures, n=1):
    from urbanarena.render.scene3d.photo_models import Model

    pos = np.tile(np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 1]], np.float32), (n, 1))
    z = np.zeros_like(pos)
    uv = np.column_stack([pos[:, 0], pos[:, 2]]).astype(np.float32)   # u = x, v = z: follows the corner
    return Model(pos, z + [0, 0, 1], z + 0.5, np.zeros(len(pos), np.float32), (1, 1, 1), "m", uv=uv,
                 tex=np.asarray(tex, np.int16), texel=z + 0.25, textures=tuple(textures))


def test_catalogue_numbers_layers_once_and_drops_far_levels():
    from urbanarena.render.scene3d.population_photo import with_texture_layers

    a = _model([1, 0, -1], ["/x/b.png", "/x/a.png"])
    b = _model([0, 0, 0], ["/x/a.png"])
    groups, textures = with_texture_layers((((a, a, a),), ((b,),)))
    assert textures == ("/x/a.png", "/x/b.png")
    assert groups[0][0][0].tex.tolist() == [0, 1, -1] and groups[0][0][1].tex.tolist() == [0, 1, -1]
    assert all(m.tex is None for m in groups[0][0][PMT.TEXTURED_LEVELS:])
    assert groups[1][0][0].tex.tolist() == [0, 0, 0]


def test_mesh_rows_follow_the_corners_and_colours_stay_baked(monkeypatch):
    from urbanarena.render.scene3d import population_photo
    from urbanarena.render.scene3d.people_look import is_mirrored
    from urbanarena.render.scene3d.population import Placement
    from urbanarena.render.scene3d.population_photo import PhotoModels, photo_placements_mesh

    monkeypatch.setattr(population_photo, "WALKING", False)   # the stride moves corners, not their UVs
    m = _model([0, 0, 0], ["/x/a.png"])
    models = PhotoModels(((m,),), (), (), (), "t", (), ("/x/a.png",))
    mirrored = next(v for v in range(100) if is_mirrored(v))
    plain = next(v for v in range(100) if not is_mirrored(v))
    for v in (mirrored, plain):
        p = Placement("p", "pedestrian", 0.0, 0.0, 0.0, 1.0, 0.5, 1.0, (0, 0, 0), "w", 0, v)
        mesh = photo_placements_mesh([p], models)
        assert mesh.uv.shape == (3, 6)
        # heading 0: world x = model x (mirrored: negated), z = height; u was the model's x, v its z
        x_model = mesh.positions[:, 0] * (-1 if v == mirrored else 1)
        assert mesh.uv[:, 0] == pytest.approx(x_model / np.float32(1.0), rel=0.15, abs=0.02)
        assert mesh.uv[:, 1] == pytest.approx(mesh.positions[:, 2], abs=1e-6)
        assert (mesh.uv[:, 2] == 0).all() and (mesh.uv[:, 3:] == 0.25).all()


def test_recolouring_touches_only_clothes_and_skin_keeps_the_texture(monkeypatch):
    """Textured drawing of a person whose clothes are recoloured: corners of region 0 (skin, hair, shoes) keep the
    baked colour, so their albedo is ``Kd`` times the texture exactly; clothing corners change colour."""
    import dataclasses

    from urbanarena.render.scene3d import population_photo
    from urbanarena.render.scene3d.people_look import clothing_colours, is_mirrored
    from urbanarena.render.scene3d.population_photo import person_look

    monkeypatch.setattr(population_photo, "WALKING", False)
    m = _model([0, 0, 0, 0, 0, 0], ["/x/a.png"], n=2)
    texel = np.full((6, 3), 0.25, np.float32)
    m = dataclasses.replace(m, colours=texel * 0.8, texel=texel,            # Kd 0.8
                            region=np.array([0, 0, 0, 1, 1, 1], np.int8), cloth_ref=(0.2, 0.2))
    v = next(v for v in range(1000) if clothing_colours(v) is not None and not is_mirrored(v))
    pos, nrm, col, uvl, tx = person_look(m, v, np.zeros((6, 3), np.float32), m.texel)
    assert np.array_equal(col[:3], m.colours[:3])                            # skin: untouched
    assert not np.allclose(col[3:], m.colours[3:])                           # clothes: recoloured
    sample = np.array([[0.1, 0.5, 0.9]] * 3)                                 # any texture value at a fragment
    assert PMT.textured_albedo(col[:3], sample, tx[:3]) == pytest.approx(0.8 * sample, abs=1e-6)
