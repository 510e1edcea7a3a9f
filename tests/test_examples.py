"""Every script in examples/ runs to the end (non-interactive matplotlib backend), and so
does the README's Python code, which a newcomer copies first."""
import re
import runpy
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
README = ROOT / "README.md"


@pytest.mark.skipif(not EXAMPLES, reason="examples/ is not beside the tests")
@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *args, **kwargs: None)
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        plt.close("all")


def _readme_blocks():
    if not README.exists():
        return []
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


@pytest.mark.skipif(not _readme_blocks(), reason="README.md is not beside the tests")
@pytest.mark.parametrize("code", _readme_blocks(), ids=lambda c: c.splitlines()[0][:40])
def test_readme_python_runs_without_warnings(code):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(code, str(README), "exec"), {})
