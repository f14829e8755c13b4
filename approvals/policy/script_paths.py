"""The files a command of a script touches: its redirections and file operands, each
decided by where it really is (`path_eval.decide_use`), and what an extraction or a patch
writes (its members, read before it runs: `archives.py`)."""

from __future__ import annotations

import posixpath
from dataclasses import replace
from functools import lru_cache
from typing import Protocol

from . import archives
from .archives import link_target
from .command import SimpleCommand
from .fileuse import FileUse
from .operands import file_uses
from .options import Invocation, invocation
from .path_eval import decide_use
from .programs.kit import Walk
from .programs.model import Model
from .rules import CompiledPolicy
from .verdicts import ALLOW, PathUse

NETWORK_DEVICES = ("/dev/tcp/", "/dev/udp/")


class PolicyWalk(Walk, Protocol):
    """A script's evaluation as its commands' paths read it (`script_eval._Walk`)."""

    @property
    def policy(self) -> CompiledPolicy: ...

    index_changed: bool  # an earlier command may have changed what git tracks


@lru_cache(maxsize=4096)
def _static_file_uses(words: tuple[str, ...]) -> tuple[FileUse, ...]:
    """The files a command without run-time words names: a function of its words alone."""
    return tuple(file_uses(invocation(words), words))


def command_paths(walk: PolicyWalk, cmd: SimpleCommand, inv: Invocation, model: Model | None = None
                  ) -> tuple[list[PathUse], list[str], bool]:
    """(path uses, floor rules, talks to the network through /dev/tcp) of one command
    (`walk`: the script's walk, its policy, working directories and resolver; `model`: a
    rule policy's own model of the program)."""
    uses: list[PathUse] = []
    floors: list[str] = []
    network = False
    policy = walk.policy
    for red in cmd.redirects:
        if red.target.startswith(NETWORK_DEVICES):
            network = True
        if not (red.writes or red.reads):
            continue
        resolver = walk.resolver
        if red.writes:
            loc = resolver.locate(red.target, walk.cwds, dynamic=red.dynamic, glob=red.glob, access="write")
            use, more = decide_use(policy, resolver, loc, "write", redirect=True)
            uses.append(use)
            floors += more
        if red.reads:
            loc = resolver.locate(red.target, walk.cwds, dynamic=red.dynamic, glob=red.glob, access="read")
            use, more = decide_use(policy, resolver, loc, "read")
            uses.append(use)
            floors += more
    for fu in (_static_file_uses(cmd.words) if not cmd.wild_at and not cmd.operands_unknown and model is None
               else file_uses(inv, cmd.words, model)):
        if fu.word in _NOT_FILES or fu.word.startswith("/dev/fd/"):
            continue
        resolver = walk.resolver
        dynamic = any(i in cmd.dynamic_at for i in fu.at) or (fu.word != "~" and "$" in fu.word
                                                               and not fu.at)
        glob = any(i in cmd.glob_at for i in fu.at)
        access = "read" if fu.access == "read" else "write"
        # find's `{}` stands for every file under its start path (`find . -exec cat {} +`)
        tree = fu.tree or any(i in cmd.tree_at for i in fu.at)
        deref = fu.deref or (tree and cmd.follows_links)
        loc = resolver.locate(fu.word, [resolver.workspace] if fu.top else walk.cwds, dynamic=dynamic, glob=glob,
                              access=access, tree=tree, follow=fu.follow)
        use, more = decide_use(policy, resolver, loc, fu.access, tree=tree, deref=deref,
                               tracked=fu.tracked and not walk.index_changed)
        uses.append(use)
        floors += more
        if fu.extracts is not None:
            found, more = _extracted(walk, cmd, fu, dynamic)
            uses += found
            floors += more
    return uses, floors, network


# At most this many of an extraction's members are shown (the first that are not allowed).
_SHOWN_MEMBERS = 20


def _extracted(walk: PolicyWalk, cmd: SimpleCommand, fu: FileUse, dynamic: bool) -> tuple[list[PathUse], list[str]]:
    """The members an extraction writes, each decided as a write into its directory (a
    link member as a link to its target); what is not allowed is returned. Members not
    known before it runs (the archive is read from a pipe, not there yet, unreadable) are
    one write of a path only known at run time."""
    assert fu.extracts is not None
    source, kind, strip, junk = fu.extracts
    resolver = walk.resolver
    listed = None
    text = None
    if kind == "patch" and source == "-":  # the patch is the command's input
        if cmd.stdin == "heredoc" and cmd.stdin_text is not None:
            text = cmd.stdin_text
        inputs = [r for r in cmd.redirects if r.reads and r.op == "<" and not r.dynamic]
        source = inputs[-1].target if cmd.stdin == "file" and inputs else ""
    source_at = [i for i, w in enumerate(cmd.words) if w == source]
    if text is not None:
        listed = archives.patch_targets(text, None if strip < 0 else strip)
        source = "its input"
    elif source and resolver.ctx.filesystem and not dynamic and not any(i in cmd.dynamic_at for i in source_at):
        archive = resolver.locate(source, walk.cwds, access="read")
        if archive.real is not None and not archive.unknown:
            if kind == "patch":
                read = archives.patch_text(archive.real)
                listed = None if read is None else archives.patch_targets(read, None if strip < 0 else strip)
            else:
                listed = archives.members(archive.real, kind, strip=strip, junk=junk)
    what = f"`{cmd.text}`"
    if listed is None:
        loc = resolver.locate(posixpath.join(fu.word, "$MEMBER"), walk.cwds, dynamic=True, access="write")
        use, unknown_floors = decide_use(walk.policy, resolver, loc, "write")
        reason = f"{what} writes files whose names are not known before it runs, so they may lie anywhere."
        return [replace(use, reason=reason)], unknown_floors
    out: list[PathUse] = []
    floors: list[str] = []
    for member in listed:
        written = posixpath.join(fu.word, member.name)
        loc = resolver.locate(written, walk.cwds, access="write")  # (through a link already there)
        use, more = decide_use(walk.policy, resolver, loc, "write")
        if use.decision == ALLOW and member.link is not None:
            target = link_target(member)
            link = resolver.locate(target if target.startswith("/") else posixpath.join(fu.word, target), walk.cwds,
                                   access="link")
            use, more = decide_use(walk.policy, resolver, link, "link")
        if use.decision != ALLOW:
            verb = "patches" if kind == "patch" else "extracts"
            out.append(replace(use, reason=f"{what} {verb} `{member.name}` from `{source}`: {use.reason}"))
            floors += more
            if len(out) >= _SHOWN_MEMBERS:
                break
    return out, floors


_NOT_FILES = frozenset({"-", "", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/null", "/dev/tty"})
