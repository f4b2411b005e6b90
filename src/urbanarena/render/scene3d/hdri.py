"""Float reader of OpenEXR environment maps (the ``photo`` style's HDRI sky, :mod:`.photo_sky`).

OpenCV here is built without EXR and imageio reads EXR only as 8-bit, so the maps are read with the ``OpenEXR``
package (BSD-3-Clause; the Academy Software Foundation's bindings, a binary wheel). :func:`read_exr` returns the
map as it is stored (no clamping: DWA-compressed maps hold small negative ringing around the sun, which
:mod:`.photo_sky` clamps), converted to float32 RGB.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


class HdriError(ValueError):
    """An environment map that cannot be read (missing, not OpenEXR, no RGB channels); the message names the
    file."""


def read_exr(path: str | Path) -> np.ndarray:
    """The RGB channels of the OpenEXR file ``path`` as float32 ``(H, W, 3)`` (row 0 the top of the image), linear
    values as stored (half channels widened exactly; a grey ``Y`` channel is repeated into R, G, B).

    Raises:
        HdriError: the file is missing or unreadable, or holds neither ``R``, ``G``, ``B`` nor ``Y`` channels.
    """
    import OpenEXR

    p = Path(path)
    try:
        with OpenEXR.File(str(p), separate_channels=True) as f:
            channels = {name: np.asarray(ch.pixels) for name, ch in f.channels().items()}
    except (RuntimeError, OSError, ValueError) as e:
        raise HdriError(f"{p}: not a readable OpenEXR file ({str(e).splitlines()[0] if str(e) else type(e).__name__})") \
            from e
    if all(c in channels for c in "RGB"):
        planes = [channels[c] for c in "RGB"]
    elif "Y" in channels:
        planes = [channels["Y"]] * 3
    else:
        raise HdriError(f"{p}: no R, G, B (or Y) channels in the OpenEXR file (found: {', '.join(sorted(channels))})")
    if any(pl.ndim != 2 or pl.shape != planes[0].shape for pl in planes) or planes[0].size == 0:
        raise HdriError(f"{p}: channels of unequal or empty shape {[pl.shape for pl in planes]}")
    return np.stack([pl.astype(np.float32) for pl in planes], axis=-1)


__all__ = ["HdriError", "read_exr"]
