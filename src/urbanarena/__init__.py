"""urbanarena: city environments and evaluation of embodied agents.

Layers import one way: ``world`` <- ``render`` <- ``env`` <- ``tasks`` <-
``agents`` <- ``runner`` <- ``cli`` / ``report``.
"""

__version__ = "0.1.0"
