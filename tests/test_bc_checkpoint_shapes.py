"""A bc checkpoint's metadata sizes are checked against its stored tensors before any network is built
(issue 29, item 16: ``hidden=200000`` in the metadata asked for a 160 GB network). The expected shapes are
written out here by hand from the layer layout (Linear(n_vector, h), Linear(h, h), Linear(h, n_actions))."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
from safetensors.torch import save_file  # noqa: E402

from urbanarena.agents.bc import train as bc_train  # noqa: E402
from urbanarena.errors import UrbanArenaError  # noqa: E402


def _tensors(n_vector: int, n_actions: int, hidden: int) -> dict:
    return {"net.0.weight": torch.zeros(hidden, n_vector), "net.0.bias": torch.zeros(hidden),
            "net.2.weight": torch.zeros(hidden, hidden), "net.2.bias": torch.zeros(hidden),
            "net.4.weight": torch.zeros(n_actions, hidden), "net.4.bias": torch.zeros(n_actions)}


def _write(path, tensors, meta_sizes) -> None:
    n_vector, n_actions, hidden = meta_sizes
    meta = {"figures": {"n_vector": n_vector, "n_actions": n_actions}, "config": {"hidden": hidden, "blind": False},
            "step_limit": 10, "feature_set": "map_navigation"}
    save_file(tensors, str(path), metadata={bc_train.META_KEY: json.dumps(meta)})


@pytest.fixture
def no_network(monkeypatch):
    """Fail the test if a network gets built."""
    import urbanarena.agents.bc.model as model

    def refuse(*a, **k):
        raise AssertionError(f"BCPolicy built with {a} {k}")

    monkeypatch.setattr(model, "BCPolicy", refuse)


def test_valid_checkpoint_loads(tmp_path):
    _write(tmp_path / "ok.safetensors", _tensors(5, 3, 4), (5, 3, 4))
    model, meta = bc_train.load_checkpoint(tmp_path / "ok.safetensors")
    assert meta["config"]["hidden"] == 4 and model.net[0].weight.shape == (4, 5)


def test_huge_hidden_refused_before_building(tmp_path, no_network):
    _write(tmp_path / "big.safetensors", _tensors(5, 3, 4), (5, 3, 200000))
    with pytest.raises(UrbanArenaError, match=r"hidden=200000 is not an integer in \[1, 4096\]"):
        bc_train.load_checkpoint(tmp_path / "big.safetensors")


@pytest.mark.parametrize("sizes,match", [((5, 3, 8), "net.0.weight has shape"), ((6, 3, 4), "net.0.weight"),
                                         ((5, 2, 4), "net.4.weight"), ((5, 3, "4"), "hidden='4'"),
                                         ((5, 3, True), "hidden=True"), ((0, 3, 4), "n_vector=0")])
def test_mismatch_refused(tmp_path, no_network, sizes, match):
    _write(tmp_path / "bad.safetensors", _tensors(5, 3, 4), sizes)
    with pytest.raises(UrbanArenaError, match=match) as e:
        bc_train.load_checkpoint(tmp_path / "bad.safetensors")
    assert "bad.safetensors" in str(e.value)


def test_missing_or_extra_tensor_refused(tmp_path, no_network):
    t = _tensors(5, 3, 4)
    t["net.6.weight"] = torch.zeros(1)
    _write(tmp_path / "extra.safetensors", t, (5, 3, 4))
    with pytest.raises(UrbanArenaError, match="are not those of the policy"):
        bc_train.load_checkpoint(tmp_path / "extra.safetensors")


@settings(max_examples=60, deadline=None)
@given(st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
       st.tuples(st.integers(-2, 8), st.integers(-2, 8), st.integers(-2, 8)))
def test_metadata_matches_tensors_or_is_refused(tmp_path_factory, stored, claimed):
    p = tmp_path_factory.mktemp("ck") / "c.safetensors"
    _write(p, _tensors(*stored), claimed)
    if stored == claimed:
        model, _ = bc_train.load_checkpoint(p)
        assert tuple(model.net[4].weight.shape) == (stored[1], stored[2])
    else:
        with pytest.raises(UrbanArenaError):
            bc_train.load_checkpoint(p)
