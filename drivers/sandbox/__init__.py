"""The OS sandbox floor under every process Gatehouse starts for a run (issue 28).

Pure Python, no Django: `Floor` (spec.py) is the value, `bwrap.options` its bubblewrap
command line, `launch.prepare` what starts one process inside it (bridges included),
`probe.availability` whether this machine can build it. The worker makes each run's
floor from the settings (drivers/runfloor.py); `drivers.processes.spawn` starts every
process inside it. docs/sandbox.md says what it guarantees and what it does not.
On the host side, the egress proxy (`egress`, speaking `http1` over `streams`) is the
floor's only way to the network; docs/network.md.
"""

from __future__ import annotations

from .bridge import open_unix
from .bwrap import visible
from .control import changed_since, present, snapshot, write_refusal
from .endpoints import Bridge, EndpointError, urls_in_env
from .launch import Launch, prepare
from .probe import Availability, availability
from .spec import MODES, Floor, Mode, SocketBridge

__all__ = [
    "MODES", "Availability", "Bridge", "EndpointError", "Floor", "Launch", "Mode", "SocketBridge",
    "availability", "changed_since", "open_unix", "prepare", "present", "snapshot", "urls_in_env", "visible", "write_refusal",
]
