"""Ask bash itself how it reads a script, without running it.

Where tree-sitter-bash and bash can disagree (a backslash-newline inside a word, a
here-document's delimiter and the blanks before its lines, a carriage return), the policy
also reads the script as bash prints it back: the script becomes the body of a function
that bash imports from its environment (`BASH_FUNC_f%%=() { SCRIPT }`), and
`declare -f f` prints that function in bash's own canonical form: continuations joined,
`<<-` tabs stripped, delimiters unquoted (`<<E"O"F` reads `<<'EOF'`), one command per line.

Nothing in the script runs: bash imports a function from the environment only when the
whole value is one function definition (the Shellshock fix), so a script that closes the
brace early (`}; rm -rf ~; g() {`) is refused, not run. bash starts with an empty
environment, no rc files, no job control, and a short timeout.

This is the policy core's only subprocess. `bash_reads` returns None when bash is missing,
times out, refuses the script (a syntax error) or prints something unexpected: the caller
then asks (fails closed).
"""

from __future__ import annotations

import os
import re
import subprocess
from functools import lru_cache

BASH = "/bin/bash"
TIMEOUT_SECONDS = 2.0
MAX_CHARS = 100_000  # an environment string is at most 128 KiB on Linux

# Where the two readers can disagree: a backslash-newline, a here-document, a carriage return.
_DISAGREES = re.compile(r"\\\n|<<|\r")
_HEAD = b"f () \n{ \n"
_TAIL = b"\n}\n"


def may_disagree(script: str) -> bool:
    """A cheap look at the raw text: does it hold a construct where bash and the grammar
    can read it differently?"""
    return _DISAGREES.search(script) is not None


@lru_cache(maxsize=256)
def bash_reads(script: str) -> str | None:
    """The script as bash reads it (the body of `declare -f`), or None when bash cannot
    tell us."""
    if len(script) > MAX_CHARS or "\x00" in script or not os.access(BASH, os.X_OK):
        return None
    env = {"BASH_FUNC_f%%": "() { " + script + "\n}", "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    try:
        done = subprocess.run([BASH, "--norc", "--noprofile", "-c", "declare -f f"], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError, ValueError, UnicodeError):
        return None
    out = done.stdout
    if done.returncode != 0 or done.stderr or not out.startswith(_HEAD) or not out.endswith(_TAIL):
        return None  # refused (a syntax error), or a warning (a here-document left open)
    try:
        return out[len(_HEAD):-len(_TAIL)].decode("utf-8")
    except UnicodeDecodeError:
        return None
