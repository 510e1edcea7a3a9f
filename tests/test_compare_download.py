"""Data files named by URL for ``sparsekit-compare``: downloaded once into the data home,
served here by a real HTTP server on this machine, and the errors of a download."""
import contextlib
import gzip
import http.server
import socket
import threading
import time
from pathlib import Path

import pytest
from _compare_files import write_mulan_toy, write_svm

from sparsekit.benchmarks import _download, _run, compare
from sparsekit.benchmarks._data import load_dataset


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Files of the served folder, and three bad replies: ``/broken.svm`` ends before its
    announced length, ``/slow.svm`` sends nothing for 2 s, ``/page`` is an HTML page."""

    def do_GET(self):                                  # noqa: N802 - the base class' name
        self.server.requests.append(self.path)
        if self.path == "/broken.svm":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"1 1:0.5\n")
            self.close_connection = True
        elif self.path == "/slow.svm":
            time.sleep(2)
        elif self.path == "/page":
            body = b"<!DOCTYPE html><html><body>a repository's page</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            super().do_GET()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def _serving(folder):
    """The base URL of an HTTP server on this machine serving ``folder``; its ``requests``
    the paths asked for."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: _Handler(*a, directory=str(folder)))
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty data home, where the downloads go."""
    monkeypatch.setenv("SPARSEKIT_DATA", str(tmp_path / "home"))
    return tmp_path / "home"


def test_a_file_named_by_url_is_downloaded_once_and_compared(tmp_path, home, capsys):
    served = tmp_path / "www"
    (served / "sets").mkdir(parents=True)
    write_svm(served / "sets" / "tiny.svm")
    (served / "sets" / "tiny.t.svm.gz").write_bytes(
        gzip.compress(write_svm(tmp_path / "t.svm", n=30, seed=1).read_bytes()))
    with _serving(served) as (url, requests):
        argv = [f"{url}/sets/tiny.svm", "--test", f"{url}/sets/tiny.t.svm.gz", "--repeat", "1"]
        compare.main(argv)
        first = capsys.readouterr()
        compare.main(argv)                                  # read from the data home
        second = capsys.readouterr()
    assert requests == ["/sets/tiny.svm", "/sets/tiny.t.svm.gz"]
    stored = home / "downloads" / url.split("://")[1].replace(":", "_") / "sets"
    assert (stored / "tiny.svm").read_bytes() == (served / "sets" / "tiny.svm").read_bytes()
    assert sorted(p.name for p in stored.iterdir()) == ["tiny.svm", "tiny.t.svm.gz"]
    assert f"downloading {url}/sets/tiny.svm (0.0 MB) to {stored / 'tiny.svm'}" in first.err
    assert "downloaded earlier (delete it to download again)" in second.err
    for out in (first.out, second.out):
        assert "l1-logistic (LIBLINEAR -s 6 objective), tiny.svm (60, 8)" in out
        assert "tested on the 30 rows of tiny.t.svm.gz" in out


#: the paths whose error starts "cannot download"
CANNOT = ("/missing.svm", "/broken.svm", "/slow.svm")


def test_a_mulan_files_label_xml_is_downloaded_beside_it(tmp_path, home, capsys):
    served = tmp_path / "www"
    served.mkdir()
    write_mulan_toy(served)                              # toy.xml beside toy-train.arff
    (served / "flowers.arff").write_text("@relation f\n@attribute a numeric\n"
                                         "@attribute c {x,y}\n@data\n1,x\n2,y\n3,x\n4,y\n")
    with _serving(served) as (url, requests):
        local = _run.local_copies([f"{url}/toy-train.arff?raw=true", f"{url}/flowers.arff",
                                       "a9a"])
    assert requests == ["/toy.xml", "/toy-train.arff?raw=true", "/flowers.xml",
                        "/flowers.arff"]                  # a table: no XML there, no error
    assert local[2] == "a9a" and [p.name for p in map(Path, local[:2])] == [
        "toy-train.arff", "flowers.arff"]
    assert (Path(local[0]).parent / "toy.xml").read_bytes() == (served / "toy.xml").read_bytes()
    assert load_dataset(local[0]).multilabel and not load_dataset(local[1]).multilabel
    assert "flowers.xml" not in capsys.readouterr().err


@pytest.mark.parametrize("path, message", [
    ("/missing.svm", "HTTP 404 File not found"),
    ("/page", "is a web page (HTML), not a data file: give the URL of the file itself"),
    ("/broken.svm", "the transfer ended after 8 of 1000 bytes; try again"),
    ("/slow.svm", "the server sent nothing for 0.5 s"),
    ("/", "the URL names no file"),
])
def test_a_failed_download_is_a_clear_error_and_leaves_no_file(tmp_path, home, capsys,
                                                               monkeypatch, path, message):
    monkeypatch.setattr(_download, "TIMEOUT", 0.5)
    with _serving(tmp_path) as (url, _):
        with pytest.raises(SystemExit) as exit_info:
            compare.main([url + path])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {'cannot download ' if path in CANNOT else ''}'{url}{path}'" in err
    assert message in err
    assert not [p for p in home.rglob("*") if p.is_file()]      # no partial file kept


def test_a_server_that_is_not_there_is_a_clear_error(home):
    with socket.socket() as s:                          # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ValueError, match=f"cannot download 'http://127.0.0.1:{port}/a.svm': "
                                         ".*[Cc]onnection refused"):
        _download.local_copy(f"http://127.0.0.1:{port}/a.svm")


def test_only_urls_are_downloaded():
    assert _download.is_url("https://example.org/a9a") and _download.is_url("FTP://h/x.csv")
    assert not any(map(_download.is_url, ["a9a", "data/x.svm", "file:///x.svm", "http:x"]))
    assert _download.path_segments("https://h:8/a/./b/../scene%2Dtrain.arff?raw=1") == [
        "a", "b", "scene-train.arff"]                     # unquoted, no way out of the folder
