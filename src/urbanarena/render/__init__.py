"""What an agent sees: perspective views cut from panoramas, overlays, maps, image encoding.

Imports only :mod:`urbanarena.world` (and third-party libraries).
"""
