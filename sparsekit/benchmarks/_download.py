"""Data files named by URL for ``sparsekit-compare`` (the LIBSVM data page's files, a CSV
on the web): downloaded once into the data home's ``downloads`` folder, then read there as
any file."""
import http.client
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from sparsekit.benchmarks._data import WEB_PAGE
from sparsekit.datasets import get_data_home

#: the URL schemes downloaded
URL = re.compile(r"(?i)^(https?|ftp)://")
#: seconds without a byte from the server before a download fails
TIMEOUT = 60


def is_url(spec):
    """Whether ``spec`` is an http(s) or ftp URL."""
    return URL.match(str(spec)) is not None


def path_segments(url):
    """The folders and file name of ``url``'s path, unquoted (``.`` and ``..`` dropped)."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
    return [s for s in path.split("/") if s not in ("", ".", "..")]


def local_copy(url, data_home=None, report=None):
    """The path of ``url``'s file in ``<data home>/downloads/<host>/<path>``, downloaded
    there unless an earlier run did (a download is written beside it and renamed when
    complete: an interrupted one is not reused); ``report(text)`` is told which. Raises
    ValueError with a message for the user when it cannot be downloaded or stored."""
    report = report or (lambda text: None)
    segments = path_segments(url)
    if not segments:
        raise ValueError(f"{url!r}: the URL names no file")
    host = re.sub(r"[^\w.-]", "_", urllib.parse.urlsplit(url).netloc.rsplit("@", 1)[-1])
    path = get_data_home(data_home) / "downloads" / host / Path(*segments)
    if path.is_file():
        report(f"{url}: read from {path}, downloaded earlier (delete it to download again)")
        return path
    partial = path.with_name(path.name + ".part")
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            first = response.read(1024)
            if (response.headers.get_content_type() == "text/html"
                    or WEB_PAGE.match(first)):
                raise ValueError(f"{url!r} is a web page (HTML), not a data file: give the "
                                 "URL of the file itself (on GitHub, its Raw button)")
            size = response.headers.get("Content-Length", "")
            size = int(size) if size.isdigit() else None        # None: not announced
            shown = "" if size is None else f" ({size / 1e6:.1f} MB)"
            report(f"downloading {url}{shown} to {path}")
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(partial, "wb") as f:
                f.write(first)
                shutil.copyfileobj(response, f, 1 << 20)
                written = f.tell()
        if size is not None and written != size:    # the connection closed before the end
            raise ValueError(f"cannot download {url!r}: the transfer ended after {written} "
                             f"of {size} bytes; try again")
        partial.replace(path)
    except urllib.error.HTTPError as exc:
        raise ValueError(f"cannot download {url!r}: HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise ValueError(f"cannot download {url!r}: {exc.reason}") from None
    except TimeoutError:
        raise ValueError(f"cannot download {url!r}: the server sent nothing for "
                         f"{TIMEOUT} s") from None
    except PermissionError as exc:
        raise ValueError(f"cannot store {url!r} in {str(path.parent)!r}: {exc.strerror} (set "
                         "SPARSEKIT_DATA to a folder you can write)") from None
    except OSError as exc:                # a dropped connection, a full disk
        raise ValueError(f"cannot download {url!r} to {str(path)!r}: {exc}") from None
    except http.client.HTTPException as exc:      # a bad URL or a broken reply
        raise ValueError(f"cannot download {url!r}: {type(exc).__name__}: {exc}") from None
    finally:
        partial.unlink(missing_ok=True)
    report(f"downloaded {path.stat().st_size / 1e6:.1f} MB in "
           f"{time.perf_counter() - start:.1f} s")
    return path
