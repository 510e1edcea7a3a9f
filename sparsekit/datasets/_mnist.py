"""MNIST in the IDX format, gzip-compressed (LeCun et al. 1998)."""
import numpy as np

from ._home import _find_file, _read_bytes

_MNIST_FILES = {
    "train": ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz"),
    "test": ("mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz"),
}
_IMAGES_MAGIC = 2051
_LABELS_MAGIC = 2049


def _read_idx(path, magic, n_dims):
    raw = _read_bytes(path)
    if len(raw) < 4 * (1 + n_dims):
        raise ValueError(f"{path}: {len(raw)} bytes, shorter than an IDX header")
    header = np.frombuffer(raw, dtype=">u4", count=1 + n_dims)
    if int(header[0]) != magic:
        raise ValueError(f"{path}: IDX magic number {int(header[0])}, expected {magic}")
    shape = tuple(int(d) for d in header[1:])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 * (1 + n_dims))
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: {data.size} bytes of data, header says shape {shape}")
    return data.reshape(shape)


def load_mnist(subset="train", data_home=None):
    """Load the MNIST digits (LeCun et al. 1998) from the IDX files.

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        60000 training or 10000 test images.
    data_home : str or path-like, default=None
        See :func:`get_data_home`.

    Returns
    -------
    X : ndarray of shape (n_samples, 784), uint8
        Pixels 0..255, rows are the 28x28 images in row-major order.
    y : ndarray of shape (n_samples,), int64
        Digits 0..9.

    Examples
    --------
    >>> from sparsekit.datasets import load_mnist
    >>> X, y = load_mnist("test")
    >>> X.shape, y[:5]
    ((10000, 784), array([7, 2, 1, 0, 4]))
    """
    if subset not in _MNIST_FILES:
        raise ValueError(f"subset must be 'train' or 'test', got {subset!r}")
    images_file, labels_file = _MNIST_FILES[subset]
    images = _read_idx(_find_file(images_file, data_home), _IMAGES_MAGIC, 3)
    labels = _read_idx(_find_file(labels_file, data_home), _LABELS_MAGIC, 1)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{images.shape[0]} images but {labels.shape[0]} labels")
    X = images.reshape(images.shape[0], -1).copy()  # writeable, not a view of the file
    return X, labels.astype(np.int64)
