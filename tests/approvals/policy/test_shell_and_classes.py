"""The shell reader and the side-effect catalogue."""

import pytest

from approvals.policy import PolicyError, classify, parse_script, validate_request


@pytest.mark.parametrize("script, words", [
    ("NODE_ENV=test /usr/bin/node app.js", [("node", "app.js")]),
    ("git diff --stat HEAD~1 -- src/app.py", [("git", "diff", "--stat", "HEAD~1", "--", "src/app.py")]),
    ('echo "a b" \'c d\' e\\ f', [("echo", "a b", "c d", "e f")]),
    ('echo "$(ls -a)"', [("echo", "$(ls -a)"), ("ls", "-a")]),
    ("a | b && c; d || e & f", [("a",), ("b",), ("c",), ("d",), ("e",), ("f",)]),
])
def test_scripts_are_read_into_simple_commands_with_quotes_removed(script, words):
    parsed = parse_script(script)
    assert parsed.parsed and [c.words for c in parsed.commands] == words


@pytest.mark.parametrize("command, cls", [
    ("ls", "read-only"), ("cat a", "read-only"), ("git status", "read-only"), ("git log -p", "read-only"),
    ("touch a", "local-mutation"), ("mkdir -p a", "local-mutation"), ("git commit -m x", "local-mutation"),
    ("rm a.txt", "local-mutation"), ("sed -i s/a/b/ f", "local-mutation"), ("sed s/a/b/ f", "read-only"),
    ("git push origin main", "remote-mutation"), ("curl -X POST https://x", "remote-mutation"),
    ("curl -d a=b https://x", "remote-mutation"), ("curl https://x", "read-only"),
    ("npm publish", "remote-mutation"), ("gh pr create --fill", "remote-mutation"), ("gh pr view 1", "read-only"),
    ("rm -rf build", "destructive"), ("rm -r -f x", "destructive"), ("rm --recursive x", "destructive"),
    ("git reset --hard", "destructive"), ("git reset HEAD~1", "local-mutation"),
    ("git clean -fd", "destructive"), ("git clean -n", "read-only"), ("git push --force", "destructive"),
    ("dd if=a of=b", "destructive"), ("mkfs /dev/sda", "destructive"), ("mkfs.ext4 /dev/sda", "destructive"),
    ("python x.py", None), ("npm run build", None), ("make", None),
    ("ls && git push", "remote-mutation"), ("ls | python x", "read-only"),
])
def test_the_catalogue_classifies_common_commands(command, cls):
    assert classify({"tool": "bash", "input": {"command": command}}) == cls


@pytest.mark.parametrize("tool, cls", [("read", "read-only"), ("write", "local-mutation"), ("edit", "local-mutation"),
                                       ("MultiEdit", "local-mutation"), ("TodoWrite", "read-only"),
                                       ("mcp__x__y", None)])
def test_the_catalogue_classifies_tools(tool, cls):
    assert classify({"tool": tool, "input": {"file_path": "a"}}) == cls


@pytest.mark.parametrize("request_, field", [
    ({"tool": "bash", "input": {}}, "input.command"),
    ({"tool": "bash", "input": {"command": 1}}, "input.command"),
    ({"tool": "", "input": {}}, "tool"),
    ({"tool": "bash"}, "input"),
    ({"tool": "write", "input": {}}, "input.file_path"),
    ({"tool": "write", "input": {"file_path": ""}}, "input.file_path"),
    ({"tool": "read", "input": {}, "cwd": "relative"}, "cwd"),
    ({"tool": "read", "input": {}, "extra": 1}, "extra"),
])
def test_an_invalid_request_is_refused_naming_the_field(request_, field):
    with pytest.raises(PolicyError) as info:
        validate_request(request_)
    assert (info.value.code, info.value.field) == ("invalid_request", field)


def test_a_redirection_that_writes_a_file_is_at_least_a_local_mutation() -> None:
    from approvals.policy import DEFAULT_POLICY, compile_policy, evaluate

    verdict = evaluate(compile_policy(DEFAULT_POLICY), {"tool": "bash", "input": {"command": "echo hi > hello.txt"}, "cwd": "/w"})
    assert verdict.segments[0].side_effect_class == "local-mutation"
    assert (verdict.decision, verdict.rule) == ("allow", "classes.local-mutation")
