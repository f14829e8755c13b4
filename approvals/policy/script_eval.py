"""Deciding a shell script: one Segment per simple command, the most severe decides.

Each command is read by meaning (`options.py`) and decided, in this order:

1. its `commands` rule (the most restrictive that matches), else the rule set's default,
   else its side-effect class (the most severe of the command's own class and the classes
   of the files it writes), else the policy's default; a class allows only what the
   program's model recognises (else `commands.unverified`: `unverified.py`), and neither a
   class nor an allow rule naming the program allows a program of the workspace that has
   its name (`./ls`: `commands.workspace-program`);
2. then floors that make it at least `ask` whatever step 1 said: a deny/ask rule a
   run-time word could complete (`commands.expansion`), a computed command name
   (`commands.dynamic`), nesting deeper than we read (`commands.nesting`), an environment
   that changes what runs (`commands.environment`), code given on the command line or read
   from a pipe or a file (`commands.interpreter`, lifted only by an allow rule or grant
   naming exactly that command; also settings or hooks of the workspace's a command runs),
   a network command with a substitution or a file to send (`commands.network`), a secret
   its model says it prints (`reads.sensitive`);
3. and the decisions of the files it touches (`script_paths.py`, `path_eval.py`): a redirection that writes a
   file is decided as an edit of its target; file operands add their `edits`/`reads` rules
   and their class floors (`outside-workspace`, `protected`, sensitive reads).

Relative paths are resolved against every directory the script may be in at that point:
the request's cwd and each `cd`/`pushd` target seen before (a `cd` in a subshell may not
have happened, so both count; one only known at run time makes later relative paths
unknown).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from .classes import LOCAL, READ_ONLY, REMOTE, classify_invocation, most_severe
from .command import Script, SimpleCommand, command_name
from .decisions import fallback, rule_reason
from .operands import may_name_files
from .options import Invocation, invocation, program_name, read_words
from .paths import Resolver
from .programs.model import Model
from .programs.registry import MODELS, known, looks_through, model_of
from .risks import code_reason, env_reason, environment_reason, may_run_code, network_reason
from .rules import CompiledPolicy, RuleSet
from .script_paths import command_paths
from .shell import ARITHMETIC_MARK, parse_script
from .unverified import unverified
from .variables import risky_variable
from .verdicts import ALLOW, ASK, DENY, Decision, PathUse, Segment, Verdict

T = TypeVar("T")
_Match = tuple[Decision, int]  # (decision, index) of a rule
_Matches = tuple[_Match | None, _Match | None]  # (certain, uncertain) matches of one reading
_MAX_CWDS = 16
# Floors raised because the policy cannot read the code a command runs (an interpreter's
# script, a workspace program, a name computed at run time, settings that load code, nesting
# deeper than it reads): lifted inside the OS sandbox floor when the policy's `in_floor.code`
# is allow, since the floor bounds what that code can do (what leaves it still asks: the
# network through the egress proxy, remote mutations by their class).
CODE_FLOORS = frozenset({"commands.interpreter", "commands.dynamic", "commands.nesting", "commands.environment",
                         "commands.workspace-program"})


class _Walk:
    """The state of one script's evaluation: where it may be, the resolver (made lazily)."""

    __slots__ = ("policy", "cwds", "shown_cwd", "_make_resolver", "_resolver", "_remembered", "index_changed",
                 "floor", "lift_code")

    def __init__(self, policy: CompiledPolicy, cwd: str, resolver: Callable[[], Resolver], floor: bool = False) -> None:
        self.policy = policy
        self.floor = floor  # an OS sandbox floor holds the run (the `unverified` setting decides)
        self.lift_code = floor and policy.code == ALLOW  # CODE_FLOORS do not ask inside it
        self.cwds: list[str | None] = [cwd]
        self.shown_cwd: str | None = None
        self._make_resolver = resolver
        self._resolver: Resolver | None = None
        self._remembered: dict[tuple[str, ...], object] = {}
        # an earlier git command of the script may have changed what git tracks (`git add
        # -A && git diff --cached`): the index on disk no longer says what a later one prints
        self.index_changed = False

    def remember(self, key: tuple[str, ...], read: Callable[[], T]) -> T:
        """What `read` finds, read once per script (a model's look at the file system:
        the hooks of a repository)."""
        if key not in self._remembered:
            self._remembered[key] = read()
        return self._remembered[key]  # type: ignore[return-value]

    @property
    def resolver(self) -> Resolver:
        if self._resolver is None:
            self._resolver = self._make_resolver()
        return self._resolver

    def change_directory(self, cmd: SimpleCommand) -> None:
        name = cmd.words[0]
        if cmd.remote:
            return
        if name == "popd":
            self._add([None], "?")
            return
        args = [w for w in cmd.words[1:] if not (w.startswith("-") and w != "-")]
        if not args:
            homes: list[str | None] = list(self.resolver.homes) or [None]
            self._add(homes, homes[0] or "~")
            return
        word = args[0]
        index = cmd.words.index(word)
        if word == "-" or index in cmd.dynamic_at and not word.startswith(("$HOME", "${HOME}", "$PWD", "${PWD}")):
            self._add([None], word)
            return
        targets = self.resolver.expand(word, self.cwds, dynamic=index in cmd.dynamic_at)
        shown = next((t for t in targets if t), word)
        self._add(targets, shown)

    def _add(self, targets: list[str | None], shown: str) -> None:
        for target in targets:
            if target not in self.cwds:
                self.cwds.append(target)
        if len(self.cwds) > _MAX_CWDS:
            self.cwds = self.cwds[:_MAX_CWDS] + [None]
        self.shown_cwd = shown


_OPTION_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_*?[]!")


def _may_be_option(cmd: SimpleCommand, index: int) -> bool:
    """Whether a run-time word could turn into options: an unquoted expansion (split into
    words), a quoted one that starts the word (`"$f"` may be `-rf`; `--author="$(id)"` stays
    that option), or a glob that could match a file named like an option cluster (`*`,
    `-[r]f`, not `*.py` or `src/*`)."""
    word = cmd.words[index]
    if index in cmd.dynamic_at:
        return index in cmd.split_at or word[:1] in ("$", "`")
    return word[:1] in ("*", "?", "[", "-") and set(word) <= _OPTION_LETTERS


def _linked_program(walk: _Walk, cmd: SimpleCommand) -> str | None:
    """The program a command path really runs when it is a link to another one."""
    assert cmd.path is not None
    own = program_name(cmd.words[0])[0]
    if known(own) or looks_through(own):
        return None  # it names a program we know already (`/usr/lib/git-core/git-push` is `git push`)
    for cwd in walk.cwds:
        if cwd is None and not cmd.path.startswith("/"):
            continue
        real = walk.resolver.real_path(cmd.path if cmd.path.startswith("/") else f"{cwd}/{cmd.path}")
        name = command_name(real).lower()
        if name != cmd.words[0].lower() and (known(name) or looks_through(name)):
            return name
    return None


def _segment(walk: _Walk, cmd: SimpleCommand) -> Segment:
    policy = walk.policy
    written = cmd.words
    if cmd.operands_unknown:
        # xargs/parallel append operands at run time: one more word we cannot see
        words = cmd.words + ("$ARGS",)
        inv = invocation(words, cmd.wild_at | {len(cmd.words)})
        cmd = cmd._replace(words=words, dynamic_at=cmd.dynamic_at | {len(cmd.words)},
                           split_at=cmd.split_at | {len(cmd.words)})
    else:
        inv = invocation(cmd.words, cmd.wild_at)
    linked = _linked_program(walk, cmd) if cmd.path and not cmd.remote else None
    if linked is not None:
        # `./x -rf /` where x is a link to rm: read it as the program it runs
        cmd = cmd._replace(words=(linked,) + cmd.words[1:])
        inv = invocation(cmd.words, cmd.wild_at)
    program = inv.program
    custom = policy.programs.get(program) if policy.programs else None
    built_in = inv
    if custom is not None:
        # the rule policy's own model of the program: read with it (rules are matched
        # against both readings, below)
        model: Model | None = custom
        inv = read_words(cmd.words, cmd.wild_at, model=custom)
    else:
        model = MODELS.get(program) or model_of(program)
    cls = own_cls = classify_invocation(inv if model is None or model.reading is None else model.reading(cmd, inv),
                                        custom)
    uses: tuple[PathUse, ...] = ()
    path_floors: list[str] = []
    network_device = False
    if not cmd.remote and (cmd.redirects or cmd.operands_unknown or may_name_files(inv, custom)):
        found, path_floors, network_device = command_paths(walk, cmd, inv, custom)
        uses = tuple(found)
        cls = most_severe([cls] + [u.side_effect_class for u in uses if u.access != "read"])
        if network_device:
            cls = most_severe([cls, REMOTE])
    if cmd.writes_file and cls in (None, READ_ONLY):
        cls = LOCAL
    if own_cls is None and cls == LOCAL:
        # an unknown command stays unknown whatever it writes: `./build > out.log` is decided
        # by the rules or the default like `./build`, and its redirection as an edit besides
        cls = None
    what = f"`{cmd.text}`"
    ruleset = policy.commands
    certain = uncertain = None
    if ruleset is not None:
        certain, uncertain = ruleset.match_command(inv, own_cls)
        if custom is not None:
            certain, uncertain = _most_restrictive((certain, uncertain),
                                                   ruleset.match_command(built_in, own_cls))
    if certain is not None:
        decision, index = certain
        rule = ruleset.labels[certain]  # type: ignore[union-attr]
        reason = rule_reason(ruleset, decision, index, what)  # type: ignore[arg-type]
    else:
        decision, rule, reason = fallback(policy, ruleset, cls, what)
    unverified_floor = None
    if decision == ALLOW and model is not None and rule.startswith("classes."):
        # closed world: a class allows only what the program's model recognises
        why = unverified(inv, cmd, model)
        if why is not None:
            setting = policy.unverified if walk.floor else (
                DENY if policy.unverified == DENY else ASK)
            if setting != ALLOW:
                decision, rule = setting, "commands.unverified"
                reason = f"{what}: {why}, so " + ("it is denied." if setting == DENY else "a person decides.")
                unverified_floor = "commands.unverified"
    if cmd.path is not None and not cmd.remote and decision == ALLOW and own_cls is not None \
            and not walk.lift_code and (rule.startswith("classes.") or rule.startswith("commands.allow")) and _in_workspace(walk, cmd.path):
        # `./ls`, `.venv/bin/pip`: the workspace's own code, which the agent can write, not
        # the program whose name it has (read as it for deny and ask rules all the same)
        decision, rule = ASK, "commands.workspace-program"
        reason = (f"{what}: `{cmd.path}` is a program of the workspace (its own code, which the agent can write), "
                  f"not the system's `{program}`, so a person decides.")
        unverified_floor = rule
    ran = model.workspace_code(walk, inv) if model is not None and model.workspace_code is not None \
        and not cmd.remote else None
    revealed = model.reveals(inv, cmd) if model is not None and model.reveals is not None else None
    if uncertain is None and not uses and not network_device and cmd.plain and not may_run_code(inv, model) \
            and linked is None and ran is None and unverified_floor is None and revealed is None:
        # the common case: nothing but the command's own rule or class decides it
        return Segment._make(cmd.text, written, cls, decision, rule, False, reason, walk.shown_cwd, (),
                             "pattern" if decision == ASK else None, (), inv)
    found_floors = _floors(cmd, inv, model, ruleset, decision, uncertain, what, network_device)
    if walk.lift_code:
        found_floors = [part for part in found_floors if part[1] not in CODE_FLOORS]
        ran = linked = None
    if ran is not None:
        exact = ruleset.exact_allow(inv) if ruleset is not None else None
        if exact is None:
            found_floors.append((ASK, "commands.interpreter", f"{what} {ran}, so a person decides.", "exact"))
    if linked is not None and looks_through(linked):
        found_floors.append((ASK, "commands.dynamic", f"{what} runs `{linked}` through a link, which is not read "
                                                      "for the commands it runs, so a person decides.", None))
    if revealed is not None:
        found_floors.append((ASK, "reads.sensitive", f"{what}: {revealed}, so a person decides.", None))
    parts: list[tuple[Decision, str, str, str | None]] = [
        (decision, rule, reason, "exact" if unverified_floor is not None else "pattern")]
    for part in found_floors:
        if part[3] == "exact-rule":
            if decision == ALLOW:
                parts[0] = (part[0], part[1], part[2], "pattern")
        else:
            parts.append(part)
    floors = [p[1] for p in parts[1:]] + ([unverified_floor] if unverified_floor is not None else [])
    for use in uses:
        if use.decision != ALLOW:
            parts.append((use.decision, use.rule or "paths", use.reason, None))
    floors += path_floors
    worst = parts[0]
    for part in parts[1:]:
        if part[0].worse(worst[0]):
            worst = part
    grantable: str | None = None
    if worst[0] == ASK:
        kinds = [p[3] for p in parts if p[0] == ASK]
        grantable = None if None in kinds else ("exact" if "exact" in kinds else "pattern")
    return Segment._make(cmd.text, written, cls, worst[0], worst[1], cmd.writes_file, worst[2], walk.shown_cwd,
                         uses, grantable, tuple(dict.fromkeys(floors)) if floors else (), inv)


def _most_restrictive(first: _Matches, second: _Matches) -> _Matches:
    """Of two readings' matches ((certain, uncertain) each), the more restrictive of each:
    a rule policy's own model of a program never reads a command out of a deny rule."""
    def pick(a: _Match | None, b: _Match | None) -> _Match | None:
        if a is None or b is None:
            return a if b is None else b
        return a if a[0].severity >= b[0].severity else b
    return pick(first[0], second[0]), pick(first[1], second[1])


def _floors(cmd: SimpleCommand, inv: Invocation, model: Model | None, ruleset: RuleSet | None, decision: Decision,
            uncertain: tuple[Decision, int] | None, what: str, network_device: bool
            ) -> list[tuple[Decision, str, str, str | None]]:
    """The `ask` floors of one command beyond its own rule: (decision, rule, reason, grantable)."""
    out: list[tuple[Decision, str, str, str | None]] = []
    if uncertain is not None and uncertain[0] != ALLOW and uncertain[0].worse(decision):
        assert ruleset is not None  # an uncertain match is a rule's
        pattern = ruleset.rules[uncertain[0]][uncertain[1]].pattern
        out.append((ASK, "commands.expansion", f"{what} has words only known at run time that could make it "
                                               f"match the {uncertain[0]} rule `{pattern}`.", None))
    if cmd.dynamic_name:
        out.append((ASK, "commands.dynamic", f"{what} runs a command whose name is computed at run time, "
                                             "so a person decides.", None))
    elif model is not None and model.option_sensitive and not model.network and not out and \
            any(_may_be_option(cmd, i) for i in inv.wild_option_at):
        out.append((ASK, "commands.expansion", f"{what} has words only known at run time that could be options "
                                               f"changing what `{inv.program}` does, so a person decides.", None))
    if cmd.too_deep:
        out.append((ASK, "commands.nesting", f"{what} runs commands nested deeper than the policy reads, "
                                             "so a person decides.", None))
    env = env_reason(cmd, model)
    if env:
        out.append((ASK, "commands.environment", f"{what}: {env}, so a person decides.", None))
    code = code_reason(inv, cmd, model)
    arithmetic = len(cmd.words) == 3 and cmd.words[1] == ARITHMETIC_MARK
    exact = ruleset.exact_allow(inv) if code and ruleset is not None and not arithmetic else None
    if code and exact is None:
        # (arithmetic that may run code is a place in a script, not a command a rule or a
        # grant could name: each such script is decided once, by a person)
        out.append((ASK, "commands.interpreter", f"{what}: {code}, so a person decides.",
                    None if arithmetic else "exact"))
    elif exact is not None and ruleset is not None:
        # the rule that names exactly this use is the one that allows it
        out.append((ALLOW, ruleset.labels[exact], rule_reason(ruleset, exact[0], exact[1], what), "exact-rule"))
    shown = environment_reason(inv, cmd, model)
    if shown:
        out.append((ASK, "reads.environment", f"{what}: {shown}, so a person decides.", None))
    net = network_reason(inv, cmd, model)
    if net:
        out.append((ASK, "commands.network", f"{what}: {net}, so a person decides.", None))
    if network_device:
        out.append((ASK, "commands.network", f"{what} talks to the network through /dev/tcp, "
                                             "so a person decides.", None))
    return out


# A word that could be a program's name (`rm`, `./x`, `/usr/bin/env`), not an option, an
# assignment or a quoted script.
_PROGRAM_WORD = re.compile(r"^[A-Za-z0-9_./+~-][A-Za-z0-9_./+-]*$")
_SUFFIXES_READ = 128  # more program-like words than this: not read, asked about


def _may_wrap(cmd: SimpleCommand, segment: Segment, policy: CompiledPolicy) -> bool:
    """An unknown program (`chronic`, `pee`, `./run.sh`…) may run its arguments as a
    command, as `timeout` or `xargs` do: the policy cannot tell (unless its rule policy
    describes the program)."""
    if segment.side_effect_class is not None or cmd.dynamic_name or cmd.remote or len(cmd.words) < 2:
        return False
    program = program_name(cmd.words[0])[0]
    if policy.programs and program in policy.programs:
        return False
    model = MODELS.get(program)
    return not known(program) and not looks_through(program) and (model is None or model.runs_scripts is None)


def _wrapped_commands(cmd: SimpleCommand) -> list[SimpleCommand] | None:
    """The commands an unknown program's words would be if it ran them: each suffix that
    starts with a program-like word (`chronic rm -rf ~`), and the script a word holds
    (`pee 'rm -rf ~'`, `hyperfine 'curl -d @.env x'`); None when there are too many."""
    out: list[SimpleCommand] = []
    program = program_name(cmd.words[0])[0]
    for i, word in enumerate(cmd.words[1:], 1):
        if len(out) > _SUFFIXES_READ:
            return None
        if i in cmd.dynamic_at or i in cmd.glob_at:
            continue
        if _PROGRAM_WORD.match(word) and not word.startswith("-") and word not in (".", "..") \
                and not word.endswith("/"):
            out.append(SimpleCommand(" ".join(cmd.words[i:]), cmd.words[i:], cmd.writes_file,
                                     wrapped_by=program, level=cmd.level + 1, redirects=cmd.redirects,
                                     stdin=cmd.stdin, stdin_text=cmd.stdin_text,
                                     dynamic_at=frozenset(j - i for j in cmd.dynamic_at if j >= i),
                                     glob_at=frozenset(j - i for j in cmd.glob_at if j >= i)))
        elif any(c.isspace() for c in word) and cmd.level < 4:
            inner = parse_script(word)
            out += [sub._replace(wrapped_by=program, level=sub.level + cmd.level + 1)
                    for sub in inner.commands[:8]]
    return out


def _through_unknown(walk: _Walk, cmd: SimpleCommand) -> Segment | None:
    """The most severe rule or floor a command in an unknown program's words meets, as an
    `ask` of the program (a protected path stays denied): a deny rule on `rm -rf` is not
    sidestepped by `chronic rm -rf ~`, nor the reads rules by `pee 'cat .env'`."""
    program = program_name(cmd.words[0])[0]
    inners = _wrapped_commands(cmd)
    if inners is None:
        if walk.lift_code:
            return None  # more words than it reads: code it cannot read, bounded by the floor
        return Segment(cmd.text, cmd.words, None, ASK, "commands.dynamic",
                       reason=f"`{program}` is not a program the policy knows, and its words hold more commands it "
                              "may run than the policy reads, so a person decides.", grantable=None,
                       floors=("commands.dynamic",))
    worst: Segment | None = None
    for inner in inners:
        seg = _segment(walk, inner)
        if seg.decision == ALLOW or seg.rule in (None, "default", "commands.default"):
            continue
        if worst is None or seg.decision.severity > worst.decision.severity:
            worst = seg
    if worst is None:
        return None
    # a protected file it would write stays denied (`chronic rm -rf ~`, `chronic cp x ~/.bashrc`)
    protected = worst.decision.severity >= DENY.severity and (
        worst.rule == "classes.protected" or any(p.protected and p.access != "read" for p in worst.paths))
    reason = (f"`{cmd.text}` may run `{worst.command}` (`{program}` is not a program the policy knows, and a "
              f"command its words hold meets `{worst.rule}`: {worst.reason})")
    return Segment(cmd.text, worst.words, worst.side_effect_class, DENY if protected else ASK,
                   worst.rule if protected else "commands.dynamic", reason=reason, paths=worst.paths,
                   grantable=None, floors=("commands.dynamic",), invocation=worst.invocation)


def _in_workspace(walk: _Walk, path: str) -> bool:
    """Whether a command path runs a file of the workspace (where it really is: a link to
    /usr/bin/rm runs the system's rm); one only known at run time may."""
    loc = walk.resolver.locate(path, walk.cwds, access="read")
    return loc.unknown or loc.inside


def _stales_index(program: str) -> bool:
    model = MODELS.get(program)
    return model is not None and model.stales_index


def _assignment_segment(name: str, text: str) -> Segment:
    return Segment(text, (), READ_ONLY, ASK, "commands.environment",
                   reason=f"`{text}` sets `{name}`, which changes which program runs or how it starts, "
                          "so a person decides.", grantable=None, floors=("commands.environment",))


def decide_script(policy: CompiledPolicy, command: str, cwd: str, resolver: Callable[[], Resolver],
                  floor: bool = False) -> tuple[Verdict, Script]:
    """The verdict on a shell script (`floor`: an OS sandbox floor holds the run)."""
    script = parse_script(command)
    walk = _Walk(policy, cwd, resolver, floor)
    segments = []
    for cmd in script.commands:
        segment = _segment(walk, cmd)
        segments.append(segment)
        if _may_wrap(cmd, segment, policy):
            wrapped = _through_unknown(walk, cmd)
            if wrapped is not None:
                segments.append(wrapped)
        moves = MODELS.get(cmd.words[0])
        if moves is not None and moves.changes_directory and not cmd.dynamic_name:
            walk.change_directory(cmd)
        elif segment.side_effect_class != READ_ONLY and segment.invocation is not None \
                and _stales_index(segment.invocation.program):
            walk.index_changed = True
    for name, text in script.assignments:
        if risky_variable(name) and not walk.lift_code:
            segments.append(_assignment_segment(name, text))
    segments_t = tuple(segments)
    if len(segments_t) == 1 and script.parsed:
        only = segments_t[0]  # the common case: one command
        return Verdict._make(only.decision, only.reason, only.rule or "default", segments_t, only.side_effect_class,
                             None, (), only.floors), script
    cls = most_severe([s.side_effect_class for s in segments_t])
    floors = tuple(dict.fromkeys(f for s in segments_t for f in s.floors))
    if not segments_t:
        decision, rule, reason = fallback(policy, policy.commands, None, "an empty script")
        if not script.parsed:
            if decision.severity < DENY.severity:
                decision, rule = ASK, "commands.unparseable"
            reason = "The script does not parse as shell, so it is never allowed automatically."
        return Verdict(decision, reason, rule, (), None), script
    worst = segments_t[0]
    for seg in segments_t:  # the first of the most severe
        if seg.decision.severity > worst.decision.severity:
            worst = seg
    if not script.parsed and worst.decision.severity < DENY.severity:
        return Verdict(ASK, "The script does not parse as shell, so it is never allowed automatically.",
                       "commands.unparseable", segments_t, cls, None, (), floors + ("commands.unparseable",)), script
    return Verdict._make(worst.decision, worst.reason, worst.rule or "default", segments_t, cls, None, (), floors), script
