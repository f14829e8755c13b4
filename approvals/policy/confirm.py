"""What a person's approval takes (issue 32.2): the requirement per side-effect class the
run policy names (`approvals.confirm`), and the word a typed confirmation asks for.

*typed*: the reviewer types the program's name (for `git push`, the branch; the remote
when no branch is named), the file's name for a file change, else the tool's name.
*second-reviewer*: two different people approve.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from .classes import EDIT_TOOLS
from .run_policy import CONFIRM_ORDER
from .verdicts import ASK, Segment, Verdict

TYPED = "typed"
SECOND_REVIEWER = "second-reviewer"


def _push_target(words: tuple[str, ...]) -> str:
    """The branch a `git push` names (`main`, `HEAD:main`, `+main`, `refs/heads/main`), else its remote."""
    at = words.index("push")
    positional = [w for w in words[at + 1:] if not w.startswith("-")]
    if len(positional) >= 2:
        ref = positional[-1].lstrip("+")
        ref = ref.rpartition(":")[2] or ref
        ref = ref.removeprefix("refs/heads/")
        if ref:
            return ref
    return positional[0] if positional else ""


def _program_word(segment: Segment) -> str:
    words = segment.words or tuple(segment.command.split())
    if not words:
        return ""
    program = posixpath.basename(words[0]) or words[0]
    if program == "git" and "push" in words:
        return _push_target(words) or program
    return program


def confirmation_word(request: Mapping[str, Any], segment: Segment | None) -> str:
    """The word a typed confirmation asks for (see the module's docstring)."""
    if segment is not None:
        word = _program_word(segment)
        if word:
            return word[:200]
    tool = str(request.get("tool") or "")
    tool_input = request.get("input") or {}
    if tool in EDIT_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if isinstance(path, str) and posixpath.basename(path.rstrip("/")):
            return posixpath.basename(path.rstrip("/"))[:200]
    return tool[:200]


def confirmation_for(requirements: Mapping[str, str], request: Mapping[str, Any], verdict: Verdict | None) -> tuple[str, str]:
    """(requirement, word) for an approval asked about `request`: the strictest requirement
    among the classes of what made it ask (the script's asking commands, else the request's
    class), and for `typed` the word from the command that carries it. ("", "") when
    nothing more than Approve is needed."""
    if not requirements or verdict is None:
        return "", ""
    asking = [s for s in verdict.segments if s.decision == ASK] or list(verdict.segments)
    candidates: list[tuple[str | None, Segment | None]] = [(s.side_effect_class, s) for s in asking]
    if not candidates:
        candidates = [(verdict.side_effect_class, None)]
    best, carrier = "", None
    for cls, segment in candidates:
        needed = requirements.get(cls or "", "")
        if needed and CONFIRM_ORDER.get(needed, 0) > CONFIRM_ORDER.get(best, 0):
            best, carrier = needed, segment
    if not best:
        return "", ""
    return best, confirmation_word(request, carrier) if best == TYPED else ""


__all__ = ["SECOND_REVIEWER", "TYPED", "confirmation_for", "confirmation_word"]
