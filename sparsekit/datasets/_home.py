"""Where the benchmark files live, and how to open them (plain, ``.xz``, ``.gz``, ``.bz2``)."""
import bz2
import codecs
import gzip
import lzma
import os
import zlib
from pathlib import Path

def get_data_home(data_home=None):
    """Return the folder holding the benchmark data files.

    As scikit-learn's ``get_data_home``: an explicit folder, else the environment variable
    ``SPARSEKIT_DATA``, else ``~/sparsekit_data``.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Explicit folder.

    Returns
    -------
    pathlib.Path
        The folder (not checked for existence; loaders check the files they need).

    Examples
    --------
    >>> from sparsekit.datasets import get_data_home
    >>> get_data_home("/data/sets").as_posix()
    '/data/sets'
    """
    if data_home is None:
        data_home = os.environ.get("SPARSEKIT_DATA") or None   # set but empty: unset
    if data_home is None:
        data_home = Path("~") / "sparsekit_data"
    return Path(data_home).expanduser()


#: compressions a data file may be stored under, besides the name the loaders ask for
_COMPRESSED = (".xz", ".gz", ".bz2")
#: where the files of each folder of the data home come from (FileNotFoundError says it)
SOURCES = {
    "libsvm": "the LIBSVM data page, "
              "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html",
    "mnist": "the MNIST database, https://yann.lecun.com/exdb/mnist/ (its four .gz files)",
    "mulan": "Mulan's multi-label data sets, "
             "https://github.com/tsoumakas/mulan/tree/master/data/multi-label (the .arff and "
             ".xml files)",
    "xmlrepo": "these are Mulan's train/test files in the Extreme Classification "
               "Repository's format: load_mulan reads the same rows",
    "debian": "built from the Debian 12 archive's Packages and Translation-en indexes",
}


def _find_file(relative, data_home=None):
    """Resolve ``relative`` under the data home, also stored plain or under another
    compression (``w8a`` as the LIBSVM page serves it for ``libsvm/w8a.xz``);
    FileNotFoundError names the missing file and where the folder's files come from."""
    home = get_data_home(data_home)
    path = home / relative
    stem = next((relative[: -len(c)] for c in _COMPRESSED if relative.endswith(c)), relative)
    for candidate in (relative, stem, *(stem + c for c in _COMPRESSED)):
        if (home / candidate).is_file():
            return home / candidate
    source = SOURCES.get(Path(relative).parts[0])
    raise FileNotFoundError(
        f"dataset file not found: {path} (pass data_home= or set the SPARSEKIT_DATA "
        f"environment variable to the folder that holds {relative}, also stored plain or as "
        f".gz, .bz2{'; source: ' + source if source else ''})"
    )


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


#: what a text file that is not UTF-8 is read as, in this order: Windows' Western code page
#: (what Excel and Notepad save in Western European locales), then Latin-1, which reads
#: any byte
FALLBACK_ENCODINGS = ("cp1252", "latin-1")
#: byte-order marks and their codecs (UTF-32's first: FF FE 00 00 also starts UTF-16's)
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


def encodings_for(head):
    """The codecs to read a text whose first bytes are ``head`` with, in order, each tried
    when the one before cannot decode it: the codec of the byte-order mark it starts with
    alone (UTF-8's; UTF-16's, as Excel's "Unicode text" files; UTF-32's), else UTF-8 and
    then :data:`FALLBACK_ENCODINGS` (the last reads any byte)."""
    codec = next((codec for bom, codec in _BOMS if head.startswith(bom)), None)
    return (codec,) if codec else ("utf-8", *FALLBACK_ENCODINGS)


def text_encodings(path):
    """:func:`encodings_for` the decompressed file ``path``."""
    try:
        with _open_binary(path) as f:
            head = f.read(4)
    except CORRUPT:                 # the reader says why
        head = b""
    return encodings_for(head)


def decode_text(data, source):
    """``(text, codec)``: the bytes ``data`` decoded by the first of
    :func:`encodings_for` them that can; a text that does not follow its byte-order mark is
    a ValueError naming ``source``."""
    encodings = encodings_for(data[:4])
    for encoding in encodings:
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError as exc:
            error = exc
    raise ValueError(f"{source}: not {encodings[0]} text, as its byte-order mark says "
                     f"({error})")


def _read_text(path):
    """Whole decompressed content of ``path`` as str (:func:`decode_text`)."""
    return decode_text(_read_bytes(path), path)[0]
