"""Cities of real, openly licensed 360-degree street photographs from Panoramax.

`Panoramax <https://panoramax.fr>`_ is a federated collection of street-level
pictures under open licences, served by instances that speak a STAC API
(collections = picture sequences, items = pictures). This package has two parts:

* :mod:`.client` — :class:`~.client.PanoramaxClient`: search by bbox through
  ``pystac-client`` (paging, rate limits, retries), resumable and verified
  downloads into a local cache, licence/author/source URL kept per picture;
* :mod:`.build` — the pose graph (Movie Map paradigm): sequences thinned to a
  spacing, snapped to the OpenStreetMap street network of the same area,
  joined at its intersections into one graph; gaps reported, never bridged.

``pystac-client`` is an optional dependency (``pip install urbanarena[panoramax]``);
it is imported only when a search runs. This package is *not* a ``--city KIND:PATH``
importer (it defines no ``KIND``): cities are built with
``urbanarena city from-panoramax`` and then used by name.
"""

from __future__ import annotations

from urbanarena.world.importers.panoramax.client import (
    DEFAULT_INSTANCE,
    DownloadStats,
    PanoramaxClient,
    PanoramaxError,
    Picture,
    api_url,
)

__all__ = ["DEFAULT_INSTANCE", "DownloadStats", "PanoramaxClient", "PanoramaxError", "Picture", "api_url"]
