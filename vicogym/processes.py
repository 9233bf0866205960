"""Child processes that die with the process that started them.

A worker (a generation worker, a Blender render server) must not outlive its parent: not on
``kill -9``, not on SIGTERM, not when the parent dies while the worker is still starting.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any


def die_with_parent(parent: int) -> None:
    """Call first thing in a child: the kernel kills it when ``parent`` dies (Linux's
    ``PR_SET_PDEATHSIG``), and a watcher thread covers the platforms without it. ``parent``
    is passed in, because by the time the child runs the parent may already be gone."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="vicogym-parent-watch").start()


#: the variables native libraries read for the size of their thread pools
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def limit_threads(threads: int = 1) -> Any:
    """Native thread pools (BLAS, OpenMP) of this process at ``threads`` threads, and the
    same for processes it starts. Generation's work is single-threaded per worker: idle
    pool threads that spin only compete with the other workers for the cores. Returns the
    ``threadpoolctl`` limiter, which also works as a context manager that restores the
    pools on exit (the variables stay set)."""
    from threadpoolctl import threadpool_limits

    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    return threadpool_limits(limits=threads)
