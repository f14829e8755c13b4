"""Property tests (hypothesis): outcomes that hold over generated requests."""

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from approvals.policy import DEFAULT_POLICY, canonical_json, classify, compile_policy, evaluate, parse_json_strict

from .policytest import ISSUE_POLICY

DEFAULT = compile_policy(DEFAULT_POLICY)
ISSUE = compile_policy(ISSUE_POLICY)

paths = st.sampled_from(["/", "build", "src", "~", ".", "*", "node_modules", "/home/dev/project"])
destructive = st.one_of(
    st.tuples(st.just("rm"), st.sampled_from(["-rf", "-fr", "-r", "-R", "-f", "--recursive", "-rfv"]), paths)
    .map(" ".join),
    st.tuples(st.sampled_from(["git reset --hard", "git clean -fd", "git clean -f", "git push --force",
                               "git checkout --", "git stash clear", "git branch -D"]),
              st.sampled_from(["", "HEAD~1", "main", "."])).map(" ".join),
    st.sampled_from(["dd if=/dev/zero of=/dev/sda", "mkfs /dev/sda1", "mkfs.ext4 /dev/sdb", "shred x",
                     "find . -delete", "killall node"]),
)
safe = st.sampled_from(["ls", "cat a", "git status", "echo hi", "pwd", "true", "grep x y", "npm run test:unit"])


def wrap(draw_kind, inner, other):
    return {
        "substitution": f"echo $({inner})",
        "quoted-substitution": f'echo "$({inner})"',
        "backticks": f"echo `{inner}`",
        "process-substitution": f"cat <({inner})",
        "and": f"{other} && {inner}",
        "or": f"{other} || {inner}",
        "semicolon": f"{inner}; {other}",
        "pipe": f"{other} | {inner}",
        "background": f"{inner} & {other}",
        "newline": f"{other}\n{inner}",
        "subshell": f"( {inner} )",  # `((` would be arithmetic
        "brace": f"{{ {other}; {inner}; }}",
        "if": f"if {other}; then {inner}; fi",
        "for": f"for x in a b; do {inner}; done",
        "sudo": f"sudo {inner}",
        "bash-c": f"bash -c '{inner}'",
        "assignment": f"X=$({inner}) {other}",
    }[draw_kind]


kinds = st.sampled_from(["substitution", "quoted-substitution", "backticks", "process-substitution", "and", "or",
                         "semicolon", "pipe", "background", "newline", "subshell", "brace", "if", "for", "sudo",
                         "bash-c", "assignment"])


@settings(max_examples=300)
@given(destructive, kinds, safe, st.booleans())
def test_a_destructive_command_is_never_allowed_under_the_default_policy(command, kind, other, wrapped):
    script = wrap(kind, command, other) if wrapped else command
    verdict = evaluate(DEFAULT, {"tool": "bash", "input": {"command": script}})
    assert verdict.decision == "deny", (script, verdict)
    assert classify({"tool": "bash", "input": {"command": script}}) == "destructive"


denied = st.tuples(st.sampled_from(["git push", "rm -rf"]), st.sampled_from(["", "origin main", "/", "x y"])) \
    .map(lambda t: " ".join(p for p in t if p))


@settings(max_examples=300)
@given(denied, kinds, safe, st.integers(min_value=1, max_value=3))
def test_wrapping_a_denied_command_in_substitutions_chains_or_subshells_keeps_it_denied(command, kind, other, depth):
    script = command
    for _ in range(depth):
        # backquotes do not nest unescaped, nor single quotes: those levels use $( ) instead
        clash = (kind == "backticks" and "`" in script) or (kind == "bash-c" and "'" in script)
        script = wrap("substitution" if clash else kind, script, other)
    verdict = evaluate(ISSUE, {"tool": "bash", "input": {"command": script}})
    assert verdict.decision == "deny", (script, verdict)


grant_patterns = st.sampled_from(["git push", "rm -rf", "git", "rm", "*", "git push origin main", "ls"])


@settings(max_examples=300)
@given(denied, kinds, safe, st.lists(grant_patterns, max_size=3), st.booleans())
def test_no_grant_ever_turns_a_deny_into_an_allow(command, kind, other, patterns, whole_tool):
    script = wrap(kind, command, other)
    grants = [{"tool": "bash", "match": p} for p in patterns] + ([{"tool": "bash"}] if whole_tool else [])
    for policy in (ISSUE, DEFAULT):
        before = evaluate(policy, {"tool": "bash", "input": {"command": script}})
        after = evaluate(policy, {"tool": "bash", "input": {"command": script}}, grants=grants)
        if before.decision in ("deny", "abort"):
            assert after.decision == before.decision and after.rule == before.rule
        if after.decision == "allow" and before.decision != "allow":
            assert before.decision == "ask" and after.rule == "grant"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300)
@given(json_values)
def test_canonical_json_round_trips_and_is_idempotent(value):
    text = canonical_json(value)
    parsed = parse_json_strict(text.encode("utf-8"))
    assert canonical_json(parsed) == text
    assert json.loads(text) == json.loads(json.dumps(value))


@settings(max_examples=200)
@given(st.text(alphabet="0123456789-+.eE", min_size=1, max_size=12))
def test_numbers_keep_the_literal_they_were_written_with(literal):
    try:
        json.loads(literal)
    except ValueError:
        return
    assert canonical_json(parse_json_strict(f"[{literal}]")) == f"[{literal}]"


# --- respellings from the programs' option models (issue 9) ------------------------------------------

from approvals.policy.options import spec_of  # noqa: E402

# (program, subcommand or None): rules are drawn from these programs' option specs
RESPELLED = [("rm", None), ("cp", None), ("mv", None), ("chmod", None), ("chown", None), ("ln", None),
             ("mkdir", None), ("touch", None), ("tee", None), ("sed", None), ("grep", None), ("rg", None),
             ("curl", None), ("wget", None), ("tar", None), ("sort", None), ("git", "push"), ("git", "reset"),
             ("git", "clean"), ("git", "branch"), ("git", "checkout"), ("git", "commit"), ("git", "add"),
             ("docker", "rm"), ("docker", "run"), ("docker", "build"), ("pip", "install"), ("pip", "uninstall"),
             ("kubectl", "delete"), ("npm", "publish"), ("npm", "install")]
GLOBALS = {"git": ["-C .", "--no-pager", "-c color.ui=auto", "--git-dir=.git", "-P"],
           "docker": ["--context x", "-D", "--log-level info"], "kubectl": ["-n ns", "--context c"],
           "npm": ["--prefix p", "-g"], "pip": ["-q", "--isolated"]}
WRAPPERS = ["", "sudo ", "sudo -u root ", "env ", "env A=1 ", "nice -n 5 ", "timeout 5 ", "command ", "nohup ",
            "time ", "stdbuf -oL ", "busybox ", "doas "]


def _flags(spec):
    """canonical option -> its spellings (short letters, long names and their unique
    abbreviations), for options that take no value."""
    out: dict[str, dict[str, list[str]]] = {}
    for letter, canon in spec.shorts.items():
        if canon not in spec.values and canon not in spec.attached:
            out.setdefault(canon, {"short": [], "long": []})["short"].append(letter)
    for name, canon in spec.longs.items():
        if canon in spec.values or canon in spec.attached:
            continue
        entry = out.setdefault(canon, {"short": [], "long": []})
        entry["long"].append(name)
        for cut in range(3, len(name)):
            prefix = name[:cut]
            owners = {c for full, c in spec.longs.items() if full.startswith(prefix)}
            if owners == {canon}:
                entry["long"].append(prefix)
    return out


@st.composite
def respelled_denials(draw):
    program, sub = draw(st.sampled_from(RESPELLED))
    top = spec_of(program)
    spec = (top.subcommands.get(sub) or top.default_sub) if sub else top
    flags = _flags(spec)
    canons = draw(st.lists(st.sampled_from(sorted(flags)), min_size=1, max_size=3, unique=True))
    noise = draw(st.lists(st.sampled_from(sorted(flags)), max_size=2, unique=True))

    def spelled(canon, *, allow_short=True):
        entry = flags[canon]
        choices = ([("short", s) for s in entry["short"]] if allow_short else []) + [("long", n) for n in entry["long"]]
        if not choices:
            choices = [("short", s) for s in entry["short"]]
        return draw(st.sampled_from(choices))

    def spell_all(items):
        spellings = [spelled(c) for c in items]
        shorts = [s for kind, s in spellings if kind == "short"]
        longs = ["--" + n for kind, n in spellings if kind == "long"]
        words = longs[:]
        while shorts:  # random clusters of the short letters
            size = draw(st.integers(1, len(shorts)))
            words.append("-" + "".join(shorts[:size]))
            shorts = shorts[size:]
        return draw(st.permutations(words))

    head = [program] + ([sub] if sub else [])
    rule = " ".join(head + list(spell_all(canons)))
    option_words = list(spell_all(canons + [c for c in noise if c not in canons]))
    operands = draw(st.lists(st.sampled_from(["x", "build", "origin", "main", "a.txt"]), max_size=2))
    middle = option_words + operands
    middle = list(draw(st.permutations(middle))) if program not in ("docker",) else middle
    globals_ = draw(st.lists(st.sampled_from(GLOBALS.get(program, [""])), max_size=2)) if sub else []
    command = " ".join([program, *[g for g in globals_ if g]] + ([sub] if sub else []) + middle)
    wrapper = draw(st.sampled_from(WRAPPERS))
    if draw(st.booleans()):
        command = f"bash -c '{wrapper}{command}'"
    else:
        command = wrapper + command
    return rule, command


@settings(max_examples=400)
@given(respelled_denials())
def test_a_respelling_of_a_denied_command_from_the_option_models_is_never_allowed(case):
    rule, command = case
    policy = compile_policy({"commands": {"deny": [rule], "default": "allow"}, "default": "allow"})
    verdict = evaluate(policy, {"tool": "bash", "input": {"command": command}, "cwd": "/home/dev/project"})
    assert verdict.decision == "deny", (rule, command, verdict.rule, verdict.reason)


# Shell words of every kind the policy reads specially, and paths of every shape.
_FUZZ_WORDS = st.sampled_from([
    "//", "/", "..", ".", "~", "~/", "/etc", "*", "?", "[a]", "{a,b}", "$HOME", "${x}", "$(", ")", "`", "'", '"', "\\",
    "<", ">", ">>", "2>&1", "|", "&&", ";", "&", "<<<", "x", "-", "--", "-rf", "rm", "cat", "cp", "ln", "-s", "git", "-C",
    "diff", "show", "-p", "tar", "cf", "h:x", "find", "-exec", "{}", "\\;", "xargs", "sh", "-c", "env", "sudo", "curl",
    "http://169.254.169.254/", "file:///etc/passwd", "$((", "))", "=", "x=", "for", "in", "do", "done", "!", "@P",
    "declare", "-n", "printf", "-v", "read", "[[", "]]", "-eq", "let", "jq", "--rawfile", "awk", "@include", "less",
    "+!id", "script", "-qc", "chronic", "pee", "'rm -rf ~'", "kill", "$!", "%1", ".env", "src/app.py", ".git/hooks/x",
    "npm", "init", "cargo", "add", "\n"])
_FUZZ_POLICIES = [DEFAULT, ISSUE, compile_policy({**DEFAULT_POLICY, "reads": {"deny": [".env*"]}})]


@settings(max_examples=300)
@given(st.lists(_FUZZ_WORDS, min_size=1, max_size=14), st.lists(st.sampled_from([" ", "", "/"]), min_size=14, max_size=14))
@example(["cat", "//", "x"], [" ", "", ""] + [" "] * 11)  # the loop found by fuzzing
@example(["chronic", "diff", "-rf", "//", "'rm -rf ~'"], [" "] * 14)
def test_any_script_gets_a_verdict(words, separators):
    """Whatever the agent sends, the policy answers (a crash or a loop in it would stall the
    worker thread that decides: `cat //x` once looped for ever)."""
    script = "".join(w + s for w, s in zip(words, separators, strict=False))
    for policy in _FUZZ_POLICIES:
        verdict = evaluate(policy, {"tool": "bash", "input": {"command": script}, "cwd": "/home/dev/project"})
        assert verdict.decision in ("allow", "ask", "deny", "abort")
