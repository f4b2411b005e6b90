"""Config hash: covers everything that changes results, nothing else."""

from __future__ import annotations

import dataclasses
import hashlib
import json

from urbanarena.env.protocols import PROTOCOLS
from urbanarena.runner.config import EpisodeConfig, hash_config


def base(**over):
    kw = dict(protocol_id="cityseeker-v1", max_steps=35, agent_name="random", agent_config={"name": "random", "stop_prob": 0.0},
              family="cityseeker", city_hash="c" * 64)
    kw.update(over)
    return EpisodeConfig(**kw)


def test_hash_is_sha256_of_canonical_json():
    cfg = base()
    d = cfg.as_dict()
    expected = hashlib.sha256(json.dumps(d, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert cfg.hash == expected
    # key order does not matter
    assert hash_config(dict(reversed(list(d.items())))) == expected
    assert d["protocol"]["params"] == PROTOCOLS["cityseeker-v1"].params


def test_every_result_changing_field_changes_the_hash():
    h = base().hash
    variants = [
        base(protocol_id="urbanarena-graph-v1"),
        base(max_steps=36),
        base(agent_name="forward"),
        base(agent_config={"name": "random", "stop_prob": 0.1}),
        base(family="map2seq"),
        base(city_hash="d" * 64),
        base(family_version=2),
    ]
    hashes = {v.hash for v in variants}
    assert h not in hashes and len(hashes) == len(variants)
    # and an identical config hashes identically
    assert dataclasses.replace(base()).hash == h
