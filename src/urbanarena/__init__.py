"""urbanarena: city environments and evaluation of embodied agents.

Layers import one way: ``world`` <- ``render`` <- ``env`` <- ``tasks`` <- ``build`` (city building) <-
``agents`` <- ``runner`` <- ``cli`` / ``web`` / ``report`` (tests/test_import_layers.py checks it).
"""

__version__ = "0.1.0"


def _register_gym() -> None:
    try:
        from urbanarena.gym import register_envs
    except ImportError:  # pragma: no cover - gymnasium is a core dependency
        return
    register_envs()


_register_gym()
