"""CuPy RawKernel paths (optional: ``pip install sparsekit[gpu]``).

Nothing here is imported by the CPU package; CuPy is imported lazily.
"""
