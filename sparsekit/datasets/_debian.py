"""The Debian 12 package-description corpus: one JSON record per line."""
import json

import numpy as np
from sklearn.utils import Bunch

from ._home import CORRUPT, _find_file, _open_binary


def load_debian(data_home=None):
    """Load the Debian package descriptions (JSON lines, xz).

    Parameters
    ----------
    data_home : str or path-like, default=None
        See :func:`get_data_home`.

    Returns
    -------
    data : sklearn.utils.Bunch (a dict with attribute access)
        ``package`` : ndarray of str (object), the package names;
        ``section`` : ndarray of str (object), the archive section (58 classes);
        ``tags`` : list of lists of str, the debtags (empty list when untagged);
        ``text`` : list of str, synopsis and long description.

    Examples
    --------
    >>> from sparsekit.datasets import load_debian
    >>> data = load_debian()
    >>> len(data.text) == len(data.section) == len(data.tags)
    True
    """
    path = _find_file("debian/debian_packages.jsonl.xz", data_home)
    packages, sections, tags, texts = [], [], [], []
    number = 0
    try:
        with _open_binary(path) as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError(f"{path}: line {number} is not a JSON object")
                record_tags = record.get("tags") or []
                if not isinstance(record_tags, list):
                    raise ValueError(f"{path}: line {number}: tags must be a list, got "
                                     f"{type(record_tags).__name__}")
                packages.append(record["package"])
                sections.append(record["section"])
                tags.append(record_tags)
                texts.append(record["text"])
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {number} is not JSON ({exc})") from None
    except KeyError as exc:
        raise ValueError(f"{path}: line {number} has no field {exc}") from None
    except CORRUPT as exc:
        raise ValueError(f"{path}: corrupt or truncated after line {number} ({exc})") from None
    return Bunch(
        package=np.array(packages, dtype=object),
        section=np.array(sections, dtype=object),
        tags=tags,
        text=texts,
    )
