"""Sphinx configuration of sparsekit's documentation site.

Build (offline; no intersphinx fetches)::

    pip install ".[doc]"
    sphinx-build -W -b html doc doc/_build/html

The gallery runs every ``examples/plot_*.py`` script (a minute on two cores); set
``SPHINX_GALLERY_PLOT=0`` to skip it while writing prose.
"""
import os

import sparsekit

project = "sparsekit"
author = "the sparsekit developers"
copyright = "2026, the sparsekit developers"
release = version = sparsekit.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.json",
                    "auto_examples/*.codeobj.json"]
templates_path = ["_templates"]

# API pages: one generated page per public name (doc/generated, not committed)
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False
numpydoc_xref_param_type = False

# MyST renders the Markdown pages (benchmarks, architecture); $...$ math and tables
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 4

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    "plot_gallery": os.environ.get("SPHINX_GALLERY_PLOT", "True"),
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "doc_module": ("sparsekit",),
    "backreferences_dir": "generated/backreferences",   # "Examples using ..." on API pages
}

html_theme = "pydata_sphinx_theme"
html_title = f"sparsekit {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []
html_show_sourcelink = False


def _skip_metadata_request_setters(app, what, name, obj, skip, options):
    """scikit-learn adds ``set_{method}_request`` to every estimator; its own API pages
    document them, and their docstrings cite scikit-learn's glossary, not ours."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_request_setters)
