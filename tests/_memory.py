"""The peak of the memory a call allocates, as Python's tracemalloc sees it (NumPy and
SciPy arrays included)."""
import tracemalloc


def peak_allocated(call):
    """``(call(), the most bytes allocated at once during it)``."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
