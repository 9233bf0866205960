"""Child processes that die with the process that started them.

A worker (a generation worker, a Blender render server) must not outlive its parent: not on
``kill -9``, not on SIGTERM, not when the parent dies while the worker is still starting.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from vicogym.validation import is_number


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


#: where a run's work runs: this machine's processes, or Ray actors (a local instance or a cluster)
BACKENDS = ("local", "ray")
#: the settings that say where a run's work runs (never what it writes: no identity holds them)
BACKEND_SETTINGS = ("backend", "workers", "ray_address", "ray_cpus", "ray_gpus")


def check_backend(backend: Any, ray_address: Any, **resources: Any) -> None:
    """Refuse a backend, a Ray address or Ray resources per worker (``ray_cpus=...``,
    ``ray_gpus=...``) that a run could not start with, naming what to change."""
    if backend not in BACKENDS:
        raise ValueError(f"expected backend in {list(BACKENDS)}, got {backend!r}")
    if ray_address is not None and not isinstance(ray_address, str):
        raise TypeError(f"expected ray_address as a string such as 'auto' or 'ray://HOST:10001', got {ray_address!r}")
    for name, v in resources.items():
        if not is_number(v, 0):
            raise ValueError(f"expected {name} to be a non-negative number (resources per Ray worker), got {v!r}")


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


#: set in the environment of every process a run starts through a service (Ray) that does
#: not tie its processes to ours; the reaper finds them by it
OWNER_VARIABLE = "VICOGYM_OWNER"


def reap_with_this_process() -> None:
    """Processes started from here on (they inherit the environment) are killed when this
    process dies, ``kill -9`` included: a small watcher process outlives it by at most a
    second and kills every process that carries this process's mark. For services such
    as a local Ray instance, whose processes (raylet, GCS, agents) do not die with the
    process that started them. Linux (``/proc``) only; elsewhere nothing is watched."""
    import subprocess
    import sys

    if not os.path.isdir("/proc") or os.environ.get(OWNER_VARIABLE) == str(os.getpid()):
        return
    os.environ[OWNER_VARIABLE] = str(os.getpid())
    code = f"from vicogym.processes import _reap; _reap({os.getpid()})"
    env = {k: v for k, v in os.environ.items() if k != OWNER_VARIABLE}  # the watcher spares itself
    subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _reap(owner: int) -> None:
    import signal

    while True:
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            break
        time.sleep(0.5)
    mark = f"{OWNER_VARIABLE}={owner}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    marked = mark in handle.read().split(b"\0")
                if marked:
                    os.kill(int(entry), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                continue


class RayActors:
    """``count`` Ray actors of ``cls`` (built with ``args``), started on a thread of their
    own: Ray ties the processes it starts to the thread that called ``ray.init``, so the
    thread lives until :meth:`close`. A local instance (``address=None``) is reaped with
    this process, ``kill -9`` included; an existing cluster (``"auto"``, ``"ray://..."``)
    is joined and left running. :attr:`ready` is set once the actors exist (or starting
    failed): callers may do work of their own meanwhile."""

    def __init__(self, cls: type, count: int, *args: Any, address: str | None = None, cpus: float = 1.0,
                 gpus: float = 0.0):
        from vicogym.arm import require_module

        require_module("ray", "ray", "--backend ray")
        import ray

        self.ray = ray
        self.started = not ray.is_initialized()
        self.ready, self._done = threading.Event(), threading.Event()
        self.actors: list[Any] = []
        self._failed: list[BaseException] = []

        def start() -> None:
            try:
                if self.started:
                    if address is None:
                        reap_with_this_process()
                    # no address: a new local instance ("local"), never a cluster that happens to run on this
                    # machine, which ray.init() would otherwise join (RAY_ADDRESS, the latest cluster started)
                    ray.init(address=address or "local", include_dashboard=False, log_to_driver=False,
                             configure_logging=False,
                             runtime_env={"env_vars": {"PYTHONHASHSEED": "0"}})
                remote = ray.remote(num_cpus=cpus, num_gpus=gpus, max_restarts=3, max_task_retries=3)(cls)
                self.actors.extend(remote.remote(*args) for _ in range(count))
            except BaseException as exc:  # handed to the caller's thread by wait()
                self._failed.append(exc)
            finally:
                self.ready.set()
            self._done.wait()

        threading.Thread(target=start, daemon=True, name="vicogym-ray-start").start()

    def wait(self) -> list[Any]:
        """The actors, once started (the start's exception, if it failed)."""
        self.ready.wait()
        if self._failed:
            raise self._failed[0]
        return self.actors

    def close(self, pending: Any = ()) -> None:
        """Cancel ``pending`` object refs, kill the actors, shut a local instance down."""
        self.ready.wait()
        for ref in pending:
            self.ray.cancel(ref)
        for actor in self.actors:
            self.ray.kill(actor)
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()
        self._done.set()


def ray_actors(cls: type, config: Any, *args: Any) -> RayActors:
    """``config.workers`` Ray actors of ``cls`` (built with ``args``) where a run's config
    says: ``ray_address``, ``ray_cpus`` and (where it has one) ``ray_gpus`` per actor."""
    return RayActors(cls, config.workers, *args, address=config.ray_address, cpus=config.ray_cpus,
                     gpus=getattr(config, "ray_gpus", 0.0))
