"""The peak of the memory a call allocates, as Python's tracemalloc sees it (NumPy and
SciPy arrays included), and what a call leaves for the cyclic garbage collector."""
import collections
import gc
import tracemalloc
import types


def peak_allocated(call):
    """``(call(), the most bytes allocated at once during it)``."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _name(o):
    """``module.qualname`` of an object's class, or of a function."""
    kind = o if isinstance(o, types.FunctionType) else type(o)
    module = getattr(kind, "__module__", None)
    return f"{module}.{kind.__qualname__}" if isinstance(module, str) else ""


#: left in SciPy's own reference cycles before SciPy 1.14, holding only an emptied list
#: (the function L-BFGS-B is handed lets go of the datafit on return)
HOLDING_NOTHING = {"sparsekit.linear_model._sparsemax_solvers._minimize_lbfgsb.<locals>.<lambda>"}


def left_for_the_collector(call):
    """The objects of sparsekit's classes and functions that ``call()`` left unreachable in
    reference cycles (Python's cyclic garbage collector off during it, then run with
    ``DEBUG_SAVEALL``): they, and the arrays they hold, would have stayed until that
    collector ran. Those of :data:`HOLDING_NOTHING` are not counted."""
    gc.collect()
    gc.disable()
    try:
        call()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return collections.Counter(name for name in map(_name, gc.garbage)
                                   if name.startswith("sparsekit.")
                                   and name not in HOLDING_NOTHING)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
