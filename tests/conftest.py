"""Point the loaders at ../shared/datasets beside this checkout, wherever sparsekit is
installed (tests that need the files skip when the folder is absent)."""
import os
from pathlib import Path

_SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
if _SHARED_DATA.is_dir():
    os.environ.setdefault("SPARSEKIT_DATA", str(_SHARED_DATA))
