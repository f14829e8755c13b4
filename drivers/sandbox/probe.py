"""Can the floor be built on this machine? Asked once per process, and the answer kept.

Present is not enough: a container without user namespaces, or one whose seccomp profile
refuses `unshare`, has bwrap but cannot start it. The probe starts a real floor (the same
namespaces and mounts, a throw-away workspace) running `true`, and needs socat for the
bridges. The reason a failure gives is what an administrator reads on the console banner,
in `manage.py check` and in a refused run's 400 `sandbox_unavailable`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass

from . import bwrap
from .launch import bwrap_binary
from .spec import Floor

PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Availability:
    available: bool
    reason: str = ""  # why not (empty when available)


_lock = threading.Lock()
_cached: Availability | None = None


def availability(*, refresh: bool = False) -> Availability:
    """The cached answer (computed on first use, or again with `refresh`)."""
    global _cached
    with _lock:
        if _cached is None or refresh:
            _cached = _probe()
        return _cached


def _probe() -> Availability:
    if shutil.which("bwrap") is None and not os.access(bwrap.BWRAP, os.X_OK):
        return Availability(False, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    if shutil.which("socat") is None:
        return Availability(False, "socat is not installed (the floor's bridges need it): apt-get install socat")
    with tempfile.TemporaryDirectory(prefix="gatehouse-floor-probe-") as scratch:
        floor = Floor(mode="workspace-write", workspace=scratch, hidden=(scratch,))
        options = bwrap.options(floor, cwd=scratch, env={"PATH": os.defpath})
        try:
            done = subprocess.run([bwrap_binary(), *options, "--", "true"], capture_output=True, text=True,
                                  timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL, env={"PATH": os.defpath})
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Availability(False, f"bubblewrap could not start a sandbox: {exc}")
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        return Availability(False, "bubblewrap could not start a sandbox: " + (detail[-1] if detail else f"exit {done.returncode}"))
    return Availability(True)
