"""Loaders for benchmark data files, and synthetic generators.

Loaders of named sets take ``data_home=None`` (the environment variable ``SPARSEKIT_DATA``,
else ``~/sparsekit_data``, see :func:`get_data_home`) or an explicit folder, find a file
stored plain or compressed (``.xz``, ``.gz``, ``.bz2``), and raise ``FileNotFoundError``
naming the missing file and where it comes from. :func:`load_a9a` reads the copy of a9a shipped
inside the package.
"""
from ._debian import load_debian
from ._extreme_teacher import make_extreme_softmax_teacher
from ._fasttext_format import load_fasttext
from ._home import get_data_home
from ._libsvm import load_a9a, load_libsvm
from ._mnist import load_mnist
from ._mulan import load_mulan
from ._ove_toy import make_ove_toy
from ._thesis_synthetic import make_thesis_synthetic
from ._xmlrepo import load_xmlrepo

__all__ = [
    "get_data_home",
    "load_a9a",
    "load_debian",
    "load_fasttext",
    "load_libsvm",
    "load_mnist",
    "load_mulan",
    "load_xmlrepo",
    "make_extreme_softmax_teacher",
    "make_ove_toy",
    "make_thesis_synthetic",
]
