"""``sparsekit-compare``: how long Ctrl-C takes to end the command during LIBLINEAR's fit.

LIBLINEAR's ``train`` (compiled, through ctypes, without the GIL) has no time limit in the
command's tables, and Python runs its signal handler in the main thread between its own
instructions: Ctrl-C pressed during that fit took effect once the fit returned. The
command now runs the fit in a thread of its own (``interruptible``) while the main
thread waits. For each arm, in turn for ``--rounds`` rounds, the command runs in a
process of its own on w8a at ``--C`` (default 1000: long fits at the l1 table's tolerance
1e-8), its LIBLINEAR calls marked on stderr as they start and end; SIGINT is sent once a
LIBLINEAR fit has run for one second, and the seconds from it to the process's end are
reported, with the exit status and how long that fit ran in all where it ended first.
Arms: the command as it is, and its LIBLINEAR fits called in the main thread (the
command before). Writes section "compare_interrupt" of doc/benchmarks.md::

    python benchmarks/bench_compare_interrupt.py [--C 1000] [--rounds 2]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import os
import signal
import subprocess
import sys
import threading
import time

#: the command, in a process of its own, its LIBLINEAR calls marked on stderr
CHILD = """
import signal, sys, time
from liblinear import liblinearutil
from sparsekit.benchmarks import _l1_tables, compare

if sys.argv[1] == "main thread":       # the command before: the fit in the caller's thread
    _l1_tables.interruptible = lambda call, *args, **kwargs: call(*args, **kwargs)
train = liblinearutil.train


def marked(*args, **kwargs):
    print(f"LIBLINEAR start {time.perf_counter()}", file=sys.stderr, flush=True)
    model = train(*args, **kwargs)
    print(f"LIBLINEAR end {time.perf_counter()}", file=sys.stderr, flush=True)
    return model


liblinearutil.train = marked
signal.signal(signal.SIGINT, signal.default_int_handler)   # not a background job's SIG_IGN
sys.argv = ["sparsekit-compare", *sys.argv[2:]]
compare.console_main()
"""
ARMS = ("own thread (now)", "main thread")


def interrupted_run(arm, data, C):
    """(seconds from SIGINT to the process's end, exit status, seconds the interrupted
    LIBLINEAR fit ran in all where it ended before the process, else None)."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, arm.split(" (")[0], str(data),
                              "--C", str(C)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    events = []                      # (kind, time.perf_counter()) as the lines come

    def read():
        for line in child.stderr:
            if line.startswith("LIBLINEAR "):
                kind, at = line.split()[1:]
                events.append((kind, float(at)))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while True:                      # a LIBLINEAR fit that has run for one second
        time.sleep(0.05)
        if child.poll() is not None:
            raise RuntimeError(f"the command ended before a LIBLINEAR fit of 1 s (C = {C})")
        if events and events[-1][0] == "start" and time.perf_counter() - events[-1][1] > 1:
            started = events[-1][1]
            break
    sent = time.perf_counter()
    child.send_signal(signal.SIGINT)
    status = child.wait()
    ended = time.perf_counter() - sent
    reader.join(5)
    fit = [at for kind, at in events if kind == "end" and at > started]
    return ended, status, (fit[0] - started if fit else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--C", type=float, default=1000.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    data = os.path.join(_report.DATA_HOME, "libsvm", "w8a.xz")
    rows = []
    for k in range(args.rounds):
        for arm in ARMS:
            ended, status, fit = interrupted_run(arm, data, args.C)
            rows.append(f"| {k + 1} | {arm} | {ended:.2f} | {status} | "
                        f"{'—' if fit is None else f'{fit:.1f}'} |")
            print(rows[-1], flush=True)
    body = f"""Ctrl-C during a LIBLINEAR fit of `sparsekit-compare` (w8a, `--C {args.C:g}`; SIGINT sent
once a LIBLINEAR fit had run for one second; each run a process of its own, the arms in
turn): seconds from the signal to the process's end, its exit status, and how long the
interrupted fit ran in all where it ended before the process did. *own thread*: the
command as it is, LIBLINEAR's fit in a thread of its own while the main thread waits;
*main thread*: the same command with LIBLINEAR's fits called in the main thread, as
before this change.

| round | LIBLINEAR's fit in | Ctrl-C to exit, s | exit status | the interrupted fit ran, s |
|---|---|---|---|---|
""" + "\n".join(rows)
    _report.write_section("compare_interrupt",
                          "sparsekit-compare: Ctrl-C during LIBLINEAR's fit", body,
                          packages=("numpy", "scipy", "scikit-learn", "liblinear-official"))


if __name__ == "__main__":
    main()
