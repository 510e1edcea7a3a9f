"""Where the benchmark files live, and how to open them (plain, ``.xz``, ``.gz``, ``.bz2``)."""
import bz2
import gzip
import lzma
import os
import zlib
from pathlib import Path

_RELATIVE_HOME = Path("..") / "shared" / "datasets"


def _default_homes():
    """Candidates beside a source checkout: the one this package was imported from, then
    the current directory's (an installed package run from a checkout's root)."""
    return [Path(__file__).resolve().parents[2] / _RELATIVE_HOME, Path.cwd() / _RELATIVE_HOME]


def get_data_home(data_home=None):
    """Return the folder holding the benchmark files.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Explicit folder. When None, the environment variable ``SPARSEKIT_DATA`` is used
        if set, else the first existing ``<repository>/../shared/datasets`` of the source
        tree this package was imported from or of the current directory.

    Returns
    -------
    pathlib.Path
        The folder (not checked for existence; loaders check the files they need).
    """
    if data_home is None:
        data_home = os.environ.get("SPARSEKIT_DATA") or None   # set but empty: unset
    if data_home is None:
        homes = _default_homes()
        data_home = next((home for home in homes if home.is_dir()), homes[0])
    return Path(data_home).expanduser()


def _find_file(relative, data_home=None):
    """Resolve ``relative`` under the data home; FileNotFoundError names the missing file."""
    path = get_data_home(data_home) / relative
    if not path.is_file():
        raise FileNotFoundError(
            f"dataset file not found: {path} (set data_home= or the SPARSEKIT_DATA "
            "environment variable to the folder described in shared/datasets/MANIFEST.md)"
        )
    return path


def _open_binary(path):
    """Open ``path`` for binary reading, decompressing ``.xz``/``.lzma``/``.gz``/``.bz2`` by
    suffix."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; give the path of a data file")
    if not path.is_file():
        raise FileNotFoundError(f"dataset file not found: {path}")
    suffix = path.suffix.lower()
    if suffix in (".xz", ".lzma"):
        return lzma.open(path, "rb")
    if suffix == ".gz":
        return gzip.open(path, "rb")
    if suffix == ".bz2":
        return bz2.open(path, "rb")
    return open(path, "rb")


#: what a truncated or damaged compressed file raises while it is read (bz2: OSError)
CORRUPT = (EOFError, lzma.LZMAError, gzip.BadGzipFile, zlib.error, UnicodeDecodeError,
           OSError)


def _read_bytes(path):
    """Whole decompressed content of ``path``; a damaged file is a ValueError naming it."""
    f = _open_binary(path)       # a missing file or a folder: its own error, not CORRUPT
    try:
        with f:
            return f.read()
    except CORRUPT as exc:
        raise ValueError(f"{path}: corrupt or truncated file ({exc})") from None


def _read_text(path):
    """Whole decompressed content of ``path`` as str (UTF-8)."""
    try:
        return _read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc})") from None
