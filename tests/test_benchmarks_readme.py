"""benchmarks/README.md lists every benchmark script with the doc/benchmarks.md section it
writes (the scripts grew faster than the table once: eight were missing)."""
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.skipif(not (BENCH / "README.md").exists(), reason="benchmarks/ is not beside "
                    "the tests")
def test_every_script_is_listed_with_the_section_it_writes():
    rows = re.findall(r"^\| `(bench_\w+\.py)[^`]*` \|.*\| `(\w+)` \|$",
                      (BENCH / "README.md").read_text(encoding="utf-8"), re.M)
    listed = {}
    for script, section in rows:
        listed.setdefault(script, set()).add(section)
    for path in sorted(BENCH.glob("bench_*.py")):
        assert path.name in listed, f"benchmarks/README.md does not list {path.name}"
        written = set(re.findall(r'write_section\(\s*"(\w+)"', path.read_text(encoding="utf-8")))
        assert listed[path.name] <= written or not written, (
            f"{path.name}: README names {sorted(listed[path.name])}, it writes "
            f"{sorted(written)}")
