"""Behaviour-cloning baseline (``bc:CHECKPOINT`` agents; ``urbanarena train bc``; docs/gym.md).

A small policy trained by behaviour cloning from oracle demonstrations on the train split, read by
the same observation encoders as the registered envs (:mod:`urbanarena.gym`). Needs the ``train``
extra (PyTorch CPU, safetensors); checkpoints are safetensors files, never pickles. Two feature sets:
``map_navigation`` (arena; :mod:`.features`, :mod:`.mapread`, :mod:`.train`) and ``urbanground_map``
(UrbanGround ``l2_constrained`` in continuous mode; :mod:`.groundmap`, :mod:`.groundfeatures`,
:mod:`.groundtrain`, :mod:`.ground_agent`).
"""

from urbanarena.agents.bc import ground_agent as _ground_agent  # noqa: F401  (registers bc:CKPT's UrbanGround class)
from urbanarena.agents.bc.features import FEATURE_SETS, MapNavFeaturizer, make_featurizer

__all__ = ["FEATURE_SETS", "MapNavFeaturizer", "make_featurizer"]
