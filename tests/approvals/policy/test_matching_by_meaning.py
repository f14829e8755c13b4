"""Command patterns matched by meaning: the option catalogue and the matcher (issue 9)."""

import pytest

from approvals.policy import invocation
from approvals.policy.patterns import command_matches, compile_command

from .policytest import assert_cases, bash


@pytest.mark.parametrize("words, program, positionals, options, values", [
    ("rm -rf /", "rm", ("/",), {"-r", "-f"}, {}),
    ("rm -fR --verbose x", "rm", ("x",), {"-r", "-f", "-v"}, {}),
    ("rm --recur --forc /", "rm", ("/",), {"-r", "-f"}, {}),  # unique abbreviations, as getopt_long reads them
    ("git -C dir --no-pager -c k=v push -f origin main", "git", ("push", "origin", "main"),
     {"-C", "-P", "-c", "-f"}, {"-C": ("dir",), "-c": ("k=v",)}),
    ("git -Cdir push", "git", ("push",), {"-C"}, {"-C": ("dir",)}),
    ("git-push origin", "git", ("push", "origin"), set(), {}),
    ("docker --context x rm c", "docker", ("rm", "c"), {"-c"}, {"-c": ("x",)}),
    ("kubectl -n ns delete pod p", "kubectl", ("delete", "pod", "p"), {"-n"}, {"-n": ("ns",)}),
    ("npm --prefix p publish", "npm", ("publish",), {"--prefix"}, {"--prefix": ("p",)}),
    ("npm i left-pad", "npm", ("install", "left-pad"), set(), {}),  # subcommand aliases
    ("curl -sXPOST https://x", "curl", ("https://x",), {"-s", "-X"}, {"-X": ("POST",)}),
    ("curl -sd x https://x", "curl", ("https://x",), {"-s", "-d"}, {"-d": ("x",)}),
    ("curl --request=PUT https://x", "curl", ("https://x",), {"-X"}, {"-X": ("PUT",)}),
    ("tar xzf a.tgz -C /tmp", "tar", (), {"-x", "-z", "-f", "-C"}, {"-f": ("a.tgz",), "-C": ("/tmp",)}),
    ("sed -ie s/a/b/ f", "sed", ("s/a/b/", "f"), {"-i"}, {"-i": ("e",)}),  # -ie is the suffix `e`, as GNU sed reads it
    ("find . -name x -delete", "find", (".",), {"-name", "-delete"}, {"-name": ("x",)}),
    ("python3.12 -c code -x", "python", (), {"-c", "-x"}, {"-c": ("code",)}),
    ("python app.py -c x", "python", ("app.py", "-c", "x"), set(), {}),  # options end at the script
    ("RM -rf x", "rm", ("x",), {"-r", "-f"}, {}),
    ("foo -xy bar", "foo", ("bar",), {"-xy", "-x", "-y"}, {}),  # outside the catalogue: as written and as letters
])
def test_a_command_is_read_into_program_positionals_options_and_values(words, program, positionals, options, values):
    inv = invocation(tuple(words.split()))
    assert (inv.program, inv.positionals, set(inv.options), dict(inv.values)) == (program, positionals, options, values)


@pytest.mark.parametrize("pattern, command, allow, matches", [
    ("rm -rf", "rm -fr /", False, True),
    ("rm -rf", "rm -r x", False, False),
    ("rm -rf /", "rm -rf /tmp/x /", False, True),  # deny: its operands in order, others between
    ("rm -rf /", "rm -rf /tmp/x /", True, False),  # allow: word by word from the first operand
    ("git push origin", "git push -f origin main", False, True),
    ("git push origin", "git push -u origin main", True, True),
    ("git push origin", "git push -f origin main", True, False),  # an allow never widens to --force
    ("git push origin", "git push upstream origin", False, True),
    ("git push origin", "git push upstream origin", True, False),
    ("git push", "git log push", False, False),  # the subcommand comes first
    ("git push", "git pushy", False, False),
    ("chmod 777", "chmod -R 777 dir", False, True),
    ("chmod 777", "chmod -R 777 dir", True, True),
    ("npm run test:*", "npm run test:unit --watch", True, True),
    ("npm run test:*", "npm run build", True, False),
    ("git * --dry-run", "git clean -fdn", True, True),  # -n is --dry-run for git clean
    ("git * --force", "git push -f", False, True),
    ("curl -X POST", "curl -sXPOST https://x", False, True),
    ("curl -X P*", "curl --request PUT https://x", False, True),
    ("*", "anything at all", True, True),
    ("* --help", "ls --help", True, True),
    ("foo -xy", "foo -y -x", False, True),
    ("foo -xy", "foo -yx", False, True),
    ("kubectl delete", "kubectl --namespace=x delete pod p", False, True),
    ("docker rm", "docker container rm c", False, False),  # a different spelling of a subcommand is not guessed
])
def test_patterns_match_by_meaning(pattern, command, allow, matches):
    assert command_matches(pattern, command.split(), allow=allow) is matches


def test_a_pattern_with_exactly_the_words_of_a_command_names_it_exactly():
    exact = compile_command("python -c 'print(1)'")
    assert exact.exact_key is not None
    assert exact.exact_key == compile_command('python -c "print(1)"').exact_key
    assert compile_command("python -c *").exact_key is None


def test_a_run_time_word_that_could_complete_a_deny_rule_makes_it_ask():
    policy = {"commands": {"deny": ["rm -rf", "git push", "mytool -rf"], "default": "allow"}}
    assert_cases(policy, [
        ("bash", bash('rm "$f"'), "ask", "commands.expansion"),
        ("bash", bash("rm $opts /"), "ask", "commands.expansion"),
        ("bash", bash("git $sub"), "ask", "commands.expansion"),
        ("bash", bash("git ${sub} origin"), "ask", "commands.expansion"),
        ("bash", bash("mytool -- \"$f\""), "allow", "commands.default"),  # after `--` it cannot be an option
        ("bash", bash("mytool \"$f\""), "ask", "commands.expansion"),
        ("bash", bash('git commit -m "$msg"'), "allow", "commands.default"),  # an option's value
        ("bash", bash('echo "$x"'), "allow", "commands.default"),
    ])


def test_an_unknown_programs_options_still_match_as_words_and_letters():
    policy = {"commands": {"deny": ["mytool --purge", "mytool -ab"], "default": "allow"}}
    assert_cases(policy, [
        ("bash", bash("mytool --purge x"), "deny", "commands.deny[0]"),
        ("bash", bash("mytool x --purge"), "deny", "commands.deny[0]"),
        ("bash", bash("mytool -ba"), "deny", "commands.deny[1]"),
        ("bash", bash("mytool -a -b"), "deny", "commands.deny[1]"),
        ("bash", bash("mytool -a"), "allow", "commands.default"),
    ])


def test_allow_rules_are_narrow_so_a_longer_command_is_not_allowed_by_accident():
    policy = {"commands": {"allow": ["git log", "npm run test"], "default": "ask"}}
    assert_cases(policy, [
        ("bash", bash("git log --oneline"), "allow", "commands.allow[0]"),
        ("bash", bash("git -C sub log"), "allow", "commands.allow[0]"),
        ("bash", bash("git -c core.pager=x log"), "ask", "commands.interpreter"),
        ("bash", bash("npm run test -- --watch"), "allow", "commands.allow[1]"),
        ("bash", bash("npm run lint test"), "ask", "commands.default"),
    ])


def test_an_allow_rule_or_grant_never_widens_to_a_more_severe_spelling_of_its_command():
    policy = {"commands": {"allow": ["git push origin feature", "rm build/x", "curl https://api", "sed -n", "curl"],
                           "default": "ask"}, **{"classes": {"read-only": "allow", "local-mutation": "allow",
                                                             "remote-mutation": "ask", "destructive": "deny"}}}
    assert_cases(policy, [
        ("bash", bash("git push -u origin feature"), "allow", "commands.allow[0]"),
        ("bash", bash("git push --force origin feature"), "ask", "commands.default"),  # destructive: not shown
        ("bash", bash("git push origin +feature"), "ask", "commands.default"),
        ("bash", bash("rm -v build/x"), "allow", "commands.allow[1]"),
        ("bash", bash("rm -rf build/x"), "ask", "commands.default"),
        ("bash", bash("sed -n -i s/a/b/ f"), "ask", "commands.default"),
        ("bash", bash("curl -X POST https://api"), "allow", "commands.allow[4]"),  # the bare `curl` allows all curl
    ])
    grant = [{"tool": "bash", "match": "git push origin feature"}]
    assert_cases({"default": "ask"}, [
        ("bash", bash("git push origin feature"), "allow", "grant", {"grants": grant}),
        ("bash", bash("git push -f origin feature"), "ask", "default", {"grants": grant}),
    ])
