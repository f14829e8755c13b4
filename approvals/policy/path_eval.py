"""Deciding the paths of a request: edit and read tools, file operands, redirections.

A written path is decided as an edit: the `edits` rules (an allow glob sees the
workspace-relative path only; a deny or ask glob also the path as written and, outside the
workspace, its absolute form), then its class: `local-mutation` inside the workspace,
`outside-workspace` outside it (default ask), `protected` (default deny, never less than
ask). A read is decided by the `reads` rules, and a protected or secret-looking path (or
one only known at run time) is at least `ask`.

For an edit or read tool the path is the whole request (rule set default, then classes,
then the policy default). For a command, a redirection that writes a file is decided the
same way as an edit tool; a file operand of a command contributes its `edits`/`reads` rule
when one matches and its class floors, while the command's own rule decides the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .classes import LOCAL, OUTSIDE, PROTECTED, READ_ONLY, most_severe
from .decisions import class_floor, fallback, rule_reason
from .paths import LinkedTree, Location, Resolver, _under
from .rules import CompiledPolicy, RuleSet
from .verdicts import ALLOW, ASK, DENY, Decision, PathUse, Verdict

# (decision, rule, reason): what a rule, a class or a floor decides of one path
Decided = tuple[Decision, str, str]


def _candidates(loc: Location, resolver: Resolver) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(allow candidates, deny/ask candidates) a glob is tried on."""
    allow: tuple[str, ...] = (loc.relative,) if loc.inside and loc.relative and not loc.unknown else ()
    restrictive = list(allow)
    if loc.path is not None:
        ws = resolver.workspace
        if _under(loc.path, ws) and loc.path != ws:
            restrictive.append(loc.path[len(ws.rstrip("/")) + 1:])
        if not loc.inside:
            restrictive.append(loc.path.lstrip("/"))
            if loc.real:
                restrictive.append(loc.real.lstrip("/"))
    else:
        restrictive.append(loc.written.lstrip("/").removeprefix("./"))
    return allow, tuple(dict.fromkeys(c for c in restrictive if c and c != "."))


def write_class(loc: Location, access: str = "write") -> str:
    if loc.protected:
        return PROTECTED
    return OUTSIDE if (loc.unknown or not loc.inside) else LOCAL


def _hit(ruleset: RuleSet | None, loc: Location, resolver: Resolver, what: str) -> Decided | None:
    if ruleset is None:
        return None
    hit = ruleset.match_path(*_candidates(loc, resolver))
    if hit is None:
        return None
    decision, index = hit
    return decision, f"{ruleset.name}.{decision}[{index}]", rule_reason(ruleset, decision, index, what)


# A recursive read checks at most this many entries of the workspace against the `reads`
# deny and ask rules; a larger tree is asked about.
TREE_SCAN_LIMIT = 20_000


def _tree_hit(ruleset: RuleSet | None, loc: Location, resolver: Resolver, what: str,
              linked: LinkedTree | None = None, tracked: bool = False) -> Decided | None:
    """A recursive read (`grep -r KEY .`, `rg KEY`, the Grep tool) reads every file under
    its path: the most restrictive `reads` deny or ask rule that a file of the workspace
    under it matches, so a deny on `.env*` is not sidestepped by searching the directory
    that holds it. Only the workspace is walked (a tree that contains it, `..`, is walked
    there), or what a read that follows links reaches there (`linked`); a tree too large
    to check is asked about."""
    if ruleset is None or loc.real is None or not any(ruleset.rules.get(d) for d in (DENY, ASK)):
        return None
    found = resolver.tracked_entries(loc.real, TREE_SCAN_LIMIT) if tracked else None
    if found is not None:
        entries, cut = found  # what git tracks there: `git diff`, `git show`, `git log -p`
    elif linked is not None:
        entries, cut = list(linked.inside), linked.cut
    else:
        entries, cut = resolver.workspace_entries_under(loc.real, TREE_SCAN_LIMIT)
    worst: Decided | None = None
    for relative in entries:
        hit = ruleset.match_path((), (relative,))
        if hit is None or hit[0] == ALLOW:
            continue
        decision, index = hit
        if worst is None or decision.worse(worst[0]):
            reason = f"{what} reads `{relative}`: " + rule_reason(ruleset, decision, index, f"reading `{relative}`")
            worst = (decision, f"{ruleset.name}.{decision}[{index}]", reason)
            if decision == DENY:
                break
    if worst is None and cut:
        worst = (ASK, f"{ruleset.name}.tree", f"{what} reads more than {TREE_SCAN_LIMIT:,} files of the workspace, "
                 "too many to check against the reads rules: search a narrower path.")
    return worst


def _read_hit(ruleset: RuleSet | None, loc: Location, resolver: Resolver, what: str, tree: bool,
              linked: LinkedTree | None = None, tracked: bool = False) -> Decided | None:
    """The `reads` rule for a read of `loc`: its own match, or (a recursive read) a more
    restrictive one for what it reaches (`tracked`: what git tracks there)."""
    if tracked:
        return _tree_hit(ruleset, loc, resolver, what, None, True)
    own = _hit(ruleset, loc, resolver, what)
    if not tree or (own is not None and own[0] == DENY):
        return own
    below = _tree_hit(ruleset, loc, resolver, what, linked)
    if below is not None and (own is None or below[0].worse(own[0])):
        return below
    return own


def _links_out(policy: CompiledPolicy, resolver: Resolver, linked: LinkedTree, what: str,
               decided: Decided, floors: list[str]) -> Decided:
    """A read that follows links reads every tree a link leads to: each target outside
    the workspace is decided as a recursive read of its own (its reads rules, a protected
    or secret-looking path, a tree holding one), and a tree too large to follow is asked
    about, since a link to a home could lie anywhere in it."""
    decision, rule, reason = decided
    for link, target in linked.outside:
        loc = resolver.locate(target, [resolver.workspace], access="read", tree=True)  # an absolute path
        use, more = decide_use(policy, resolver, loc, "read", tree=True)
        floors += more
        if use.decision.worse(decision):
            decision, rule = use.decision, use.rule or ""
            reason = f"{what} follows the link `{link}` to `{target}`: {use.reason}"
    if linked.cut and ASK.worse(decision):
        decision, rule = ASK, "reads.tree"
        reason = (f"{what} follows links through more than {TREE_SCAN_LIMIT:,} entries, too many to check where "
                  "they lead: search a narrower path.")
    return decision, rule, reason


def _floors(policy: CompiledPolicy, loc: Location, access: str, cls: str | None, decided: Decided
            ) -> tuple[Decision, str, str, list[str]]:
    decision, rule, reason = decided
    floors: list[str] = []
    shown = f"`{loc.written}`" + (f" ({loc.real})" if loc.real and loc.real != loc.written else "")
    if access == "read":
        why = loc.protected or loc.secret
        if why or loc.unknown:
            floors.append("reads.sensitive")
            if ASK.worse(decision):
                decision, rule = ASK, "reads.sensitive"
                reason = (f"Reading {shown} needs a person: "
                          + (f"it is protected ({why})." if loc.protected else
                             f"it looks like a secret ({why})." if why else "its path is only known at run time."))
        return decision, rule, reason, floors
    if access == "link" and loc.secret and cls != PROTECTED:
        floors.append("reads.sensitive")
        if ASK.worse(decision):
            decision, rule = ASK, "reads.sensitive"
            reason = f"The link points to {shown}, which looks like a secret ({loc.secret})."
    if cls in (PROTECTED, OUTSIDE):
        floor = class_floor(policy, cls)
        floors.append(f"classes.{cls}")
        if floor.worse(decision) or rule == f"classes.{cls}":
            if floor.worse(decision):
                decision, rule = floor, f"classes.{cls}"
            if cls == PROTECTED and access == "link":
                reason = f"The link points to {shown}, which is protected ({loc.protected})."
            elif cls == PROTECTED:
                reason = f"{shown} is protected ({loc.protected}): no grant or mode allows changing it."
            elif access == "link":
                reason = f"The link points to {shown}, outside the workspace."
            elif loc.unknown:
                reason = f"{shown} is only known at run time, so it may lie outside the workspace."
            else:
                reason = f"{shown} is outside the workspace."
    return decision, rule, reason, floors


def decide_use(policy: CompiledPolicy, resolver: Resolver, loc: Location, access: str, *,
               redirect: bool = False, tree: bool = False, deref: bool = False,
               tracked: bool = False) -> tuple[PathUse, list[str]]:
    """The PathUse of one file a command touches (and the floors it raised); `tree`: the
    command acts on everything under it (a read then answers for what it reaches);
    `deref`: that read follows the links it meets there; `tracked`: the read is of what
    git tracks in the repository there (a `git diff` naming no file)."""
    if access == "read":
        what = ("printing the files git tracks here (name the paths to narrow it: `-- src`)" if tracked else
                f"reading `{loc.written}`" + (" recursively" if tree else ""))
        linked = resolver.linked_tree(loc.real, TREE_SCAN_LIMIT) if tree and deref and loc.real else None
        decided = _read_hit(policy.reads, loc, resolver, what, tree, linked, tracked) or (ALLOW, "", "")
        decision, rule, reason, floors = _floors(policy, loc, access, READ_ONLY, decided)
        if linked is not None:
            decision, rule, reason = _links_out(policy, resolver, linked, what, (decision, rule, reason), floors)
        use = PathUse(loc.written, access, loc.real, loc.relative, READ_ONLY, decision, rule or None, reason,
                      loc.protected, bool(loc.protected or loc.secret or loc.unknown))
        return use, floors
    cls = write_class(loc, access)
    what = f"writing `{loc.written}`" if access == "write" else f"a link to `{loc.written}`"
    hit = _hit(policy.edits, loc, resolver, what) if access == "write" else None
    if hit is not None:
        decided = hit
    else:
        decided = fallback(policy, policy.edits, cls, what) if redirect else (ALLOW, "", "")
    decision, rule, reason, floors = _floors(policy, loc, access, cls, decided)
    use = PathUse(loc.written, access, loc.real, loc.relative, cls, decision, rule or None, reason, loc.protected)
    return use, floors


def decide_edit(policy: CompiledPolicy, resolver: Resolver, tool: str, path: str, cwd: str,
                move_to: str | None = None) -> Verdict:
    """An edit tool's request; `move_to`: the edit moves the file there (a rename), and the
    new path is decided as a write of its own, the more severe of the two deciding."""
    verdict = _decide_edit(policy, resolver, f"{tool} of `{path}`", path, cwd)
    if move_to is None:
        return verdict
    moved = _decide_edit(policy, resolver, f"{tool} moving `{path}` to `{move_to}`", move_to, cwd)
    worst = moved if moved.decision.worse(verdict.decision) else verdict
    return Verdict(worst.decision, worst.reason, worst.rule, (),
                   most_severe([verdict.side_effect_class, moved.side_effect_class]), None,
                   verdict.paths + moved.paths, tuple(dict.fromkeys(verdict.floors + moved.floors)))


def _decide_edit(policy: CompiledPolicy, resolver: Resolver, what: str, path: str, cwd: str) -> Verdict:
    loc = resolver.locate(path, [cwd], access="write")
    cls = write_class(loc)
    decided = _hit(policy.edits, loc, resolver, what) or fallback(policy, policy.edits, cls, what)
    decision, rule, reason, floors = _floors(policy, loc, "write", cls, decided)
    use = PathUse(path, "write", loc.real, loc.relative, cls, decision, rule, reason, loc.protected)
    return Verdict(decision, reason, rule, (), cls, None, (use,), tuple(floors))


READ_PATH_KEYS = ("file_path", "path", "notebook_path")
TREE_READ_TOOLS = frozenset({"Grep", "grep"})


def read_tool_path(tool_input: Mapping[str, Any], tool: str = "") -> str | None:
    for key in READ_PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip() and "\x00" not in value:
            return value
    if tool in TREE_READ_TOOLS:
        return "."  # a search without a path searches the working directory
    return None


def decide_read(policy: CompiledPolicy, resolver: Resolver, tool: str, path: str, cwd: str,
                cls: str | None) -> Verdict:
    tree = tool in TREE_READ_TOOLS
    loc = resolver.locate(path, [cwd], access="read", tree=tree)
    what = f"{tool} of `{path}`"
    decided = _read_hit(policy.reads, loc, resolver, what, tree) or fallback(policy, policy.reads, cls, what)
    decision, rule, reason, floors = _floors(policy, loc, "read", cls, decided)
    use = PathUse(path, "read", loc.real, loc.relative, cls, decision, rule, reason, loc.protected,
                  bool(loc.protected or loc.secret or loc.unknown))
    return Verdict(decision, reason, rule, (), cls, None, (use,), tuple(floors))
