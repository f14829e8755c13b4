"""The workspace's files no person will let the agent read, for the sandbox floor to hide.

A `reads` deny rule (`"reads": {"deny": [".env*"]}`) refuses every read the policy can
see: `cat .env`, the Read tool, `grep -r KEY .`. Code the policy cannot read (a script the
agent wrote, `python -c …`) can still open the file; where the floor lets such code run
unasked (`in_floor.code: allow`), only the floor can stop it. So a run's floor replaces
each such file with an empty one (drivers/runfloor.py): whatever runs inside reads nothing.

Only a deny is hidden: an `ask` is a read a person may approve, and an approved read must
see the file. Files git tracks are left as they are: their content is in the repository's
objects, which the run reads anyway, and an empty file there would look like a change to
commit. Files created after the run starts are not hidden (the rules still refuse every
read the policy can see of them).
"""

from __future__ import annotations

import os
import posixpath

from .paths import _under
from .programs.git.index import tracked_paths
from .rules import CompiledPolicy
from .verdicts import DENY

# At most this many entries of the workspace are looked at (the recursive reads' limit).
SCAN_LIMIT = 20_000


def denied_reads(policy: CompiledPolicy, workspace: str, *, limit: int = SCAN_LIMIT) -> tuple[list[str], bool]:
    """(the workspace's untracked files, or links to files inside it, that a `reads` deny
    rule matches — absolute paths; whether the walk stopped at `limit` entries). Nothing
    when the policy denies no read (`in_floor` cannot change the reads rules). `.git` is not
    walked (it is the repository's, protected by the floor itself)."""
    ruleset = policy.reads
    if ruleset is None or not ruleset.rules.get(DENY):
        return [], False
    ws = os.path.realpath(workspace)
    tracked = set(tracked_paths(posixpath.join(ws, ".git", "index")) or ())
    found: list[str] = []
    seen = 0
    for directory, dirs, files in os.walk(ws):
        dirs[:] = [d for d in dirs if not (d == ".git" and directory == ws)]
        for name in files:
            seen += 1
            if seen > limit:
                return found, True
            path = posixpath.join(directory, name)
            relative = path[len(ws) + 1:]
            if relative in tracked:
                continue
            hit = ruleset.match_path((), (relative,))
            if hit is None or hit[0] is not DENY:
                continue
            if os.path.islink(path):
                real = os.path.realpath(path)
                if not (_under(real, ws) and os.path.isfile(real)):
                    continue
            found.append(path)
    return found, False
