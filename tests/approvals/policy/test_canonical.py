"""Canonical JSON, the input boundary, and the hashes."""

import hashlib

import pytest

from approvals.policy import PolicyError, approval_hash, canonical_json, parse_json_strict, policy_version


def test_canonical_json_sorts_keys_and_drops_whitespace():
    assert canonical_json({"b": 1, "a": [1, {"d": None, "c": True}]}) == '{"a":[1,{"c":true,"d":null}],"b":1}'


def test_canonical_json_does_not_escape_html_or_non_ascii():
    assert canonical_json({"cmd": "a && b < c > d", "name": "café ✓"}) == '{"cmd":"a && b < c > d","name":"café ✓"}'


def test_numbers_are_kept_exactly_as_written():
    text = '{"a":1.0,"b":1e3,"c":-0,"d":12345678901234567890123,"e":0.10000000000000000001,"f":1E-7}'
    assert canonical_json(parse_json_strict(text)) == text


def test_parsed_numbers_still_behave_as_numbers():
    value = parse_json_strict('{"n": 3, "x": 2.5}')
    assert value["n"] + 1 == 4 and isinstance(value["n"], int) and value["x"] * 2 == 5.0


@pytest.mark.parametrize("data, fragment", [
    (b"\xff\xfe", "UTF-8"),
    (b'"\xc3"', "UTF-8"),
    ("\ufeff{}".encode(), "byte-order mark"),
    (b"", "empty"),
    (b"{} {}", "Extra data"),
    (b'{"a": 1,}', "malformed"),
    (b"[1, 2", "malformed"),
    (b'{"a": 1, "a": 2}', "more than once"),
    (b'{"x": {"a": 1, "a": 1}}', "more than once"),
    (b'"\\ud800"', "lone surrogate"),
    (b'{"\\udc00": 1}', "lone surrogate"),
    (b'["ok", "\\ud83d"]', "lone surrogate"),
    (b"NaN", "NaN"),
    (b"[Infinity]", "Infinity"),
    (b"[" * 257 + b"]" * 257, "deeper than 256"),
    (b"{'a': 1}", "malformed"),
])
def test_the_input_boundary_refuses_with_a_clear_message(data, fragment):
    with pytest.raises(PolicyError) as info:
        parse_json_strict(data)
    assert info.value.code == "invalid_json"
    assert fragment.lower() in info.value.message.lower()


def test_nesting_of_exactly_256_is_accepted_and_a_valid_surrogate_pair_is_fine():
    assert parse_json_strict(b"[" * 256 + b"]" * 256)
    assert parse_json_strict(b'"\\ud83d\\ude00"') == "\U0001f600"
    assert parse_json_strict(b'"[[[[" ') == "[[[["  # brackets inside strings do not count


def test_a_python_string_with_a_lone_surrogate_is_refused():
    with pytest.raises(PolicyError):
        parse_json_strict('"\ud800"')


def test_approval_hash_covers_kind_capability_presentation_and_exact_request():
    base = dict(kind="permission", capability={"tool": "bash"}, presentation={"title": "Run"},
                request={"tool": "bash", "input": {"command": "ls"}, "cwd": "/w"})
    h = approval_hash(**base)
    expected = hashlib.sha256(canonical_json(base).encode()).hexdigest()
    assert h == expected and len(h) == 64
    for key, changed in [("kind", "question"), ("capability", {"tool": "write"}), ("presentation", {"title": "x"}),
                         ("request", {"tool": "bash", "input": {"command": "ls -a"}, "cwd": "/w"})]:
        assert approval_hash(**{**base, key: changed}) != h
    reordered = {"cwd": "/w", "input": {"command": "ls"}, "tool": "bash"}
    assert approval_hash(**{**base, "request": reordered}) == h


def test_policy_version_is_stable_under_key_order_and_changes_with_content():
    assert policy_version({"a": 1, "b": [1]}) == policy_version({"b": [1], "a": 1})
    assert policy_version({"a": 1}) != policy_version({"a": 2})
    assert policy_version(parse_json_strict('{"a": 1.0}')) != policy_version(parse_json_strict('{"a": 1}'))


def test_policy_error_to_dict_names_code_field_value_and_extras():
    err = PolicyError("policy_capability_unsupported", "no", field="sandbox", value="x", driver="d", dimension="sandbox")
    assert err.to_dict() == {"code": "policy_capability_unsupported", "message": "no", "field": "sandbox",
                             "value": "x", "driver": "d", "dimension": "sandbox"}
    assert isinstance(err, ValueError)
