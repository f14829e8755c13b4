"""Program models an administrator adds or overrides in the rule policy (`"programs"`).

```json
"programs": {
  "mytool": {"class": "read-only", "options": "v/verbose o/output: q",
             "effects": {"-o": "writes"}, "operands": "read",
             "subcommands": {"list": "read-only", "sync": "local-mutation"},
             "summary": "our deployment helper"}
}
```

- `class`: the side-effect class of its commands (`null`: known, no class; the rules or
  the default decide); with `subcommands`, each subcommand's class (another is unverified);
- `options`: its options in the models' spelling (`x`, `x:` takes a value, `x/long`, `?`
  an optional attached value); an option not listed leaves a command unverified, and
  without `options` every option does;
- `effects`: what an option does beyond looking (`reads`, `writes`, `writes-tree`: its
  value is a file; `code`, `network`, `settings`);
- `operands`: its operands are files it reads (`read`) or writes (`write`), or not (`none`).

A policy's model replaces the built-in one of that name for that policy; deny and ask
rules are matched against the command read both ways, so a respelling by the new model
never sidesteps them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ..classnames import CLASSES
from ..errors import json_type
from ..fileuse import FileUse
from .invocation import Invocation
from .kit import FilesOf, Words, operands
from .model import EFFECTS, Classifier, Model
from .spec import Spec, spec

PROGRAM_KEYS = ("class", "options", "effects", "operands", "subcommands", "summary")
_OPERANDS = ("read", "write", "none")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_TOKEN = re.compile(r"^(?:[A-Za-z0-9#@]?(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)*[:?]?|[A-Za-z0-9]=[A-Za-z0-9]|"
                    r"/[A-Za-z0-9][A-Za-z0-9_.-]*=[A-Za-z0-9/][A-Za-z0-9_.-]*)$")

Problems = Callable[[str, str, Any], None]


def _operand_files(access: str) -> FilesOf:
    def files(inv: Invocation, words: Words) -> list[FileUse]:
        return [FileUse(access, w, at) for w, at in operands(inv, words)]
    return files


def _by_subcommand(table: Mapping[str, str | None]) -> Classifier:
    def classify(inv: Invocation) -> str | None:
        return table.get(inv.subcommand or "")
    classify.table = {k: v for k, v in table.items() if v}  # type: ignore[attr-defined]
    return classify


def _class(value: Any, where: str, problems: Problems) -> tuple[bool, str | None]:
    if value is None or value in CLASSES:
        return True, value
    problems(where, f"must be a side-effect class ({', '.join(CLASSES)}) or null (got {value!r})", value)
    return False, None


def _model(name: str, entry: Any, problems: Problems) -> Model | None:
    where = f"programs.{name}"
    if not isinstance(entry, Mapping):
        problems(where, f"must be an object with {', '.join(PROGRAM_KEYS)} (got {json_type(entry)})", entry)
        return None
    ok = True
    for key in entry:
        if key not in PROGRAM_KEYS:
            problems(f"{where}.{key}", f"unknown key {key!r} (expected one of {', '.join(PROGRAM_KEYS)})", entry[key])
            ok = False
    good, cls = _class(entry.get("class"), f"{where}.class", problems)
    ok = ok and good
    table = entry.get("options")
    options = None
    if table is not None:
        bad = [t for t in table.split() if not _TOKEN.match(t)] if isinstance(table, str) else None
        if bad is None or bad:
            problems(f"{where}.options", "must be options as the models spell them (`v/verbose o/output: q`)"
                     + (f"; not understood: {', '.join(bad)}" if bad else f" (got {json_type(table)})"), table)
            ok = False
        else:
            options = spec(table)
    effects: dict[str, str] = {}
    raw_effects = entry.get("effects", {})
    if not isinstance(raw_effects, Mapping):
        problems(f"{where}.effects", f"must be an object: option -> one of {', '.join(EFFECTS)}", raw_effects)
        ok = False
    else:
        for option, effect in raw_effects.items():
            canon = _canonical(options, option) if options is not None else None
            if canon is None:
                problems(f"{where}.effects.{option}", "is not one of the program's options", option)
                ok = False
            elif effect not in EFFECTS:
                problems(f"{where}.effects.{option}", f"must be one of {', '.join(EFFECTS)} (got {effect!r})", effect)
                ok = False
            else:
                effects[canon] = effect
    access = entry.get("operands", "none")
    if access not in _OPERANDS:
        problems(f"{where}.operands", f"must be one of {', '.join(_OPERANDS)} (got {access!r})", access)
        ok = False
    subs = entry.get("subcommands")
    classifier: Any = cls
    if subs is not None:
        if not isinstance(subs, Mapping) or not subs:
            problems(f"{where}.subcommands", "must be an object: subcommand -> its class (or null)", subs)
            ok = False
        else:
            for sub, value in subs.items():
                good, _ = _class(value, f"{where}.subcommands.{sub}", problems)
                ok = ok and good
            classifier = _by_subcommand(subs)
            base = options if options is not None else spec("", known=False)
            options = base.with_subcommands({s: base for s in subs}, None)
    summary = entry.get("summary", "a program the rule policy describes")
    if not isinstance(summary, str):
        problems(f"{where}.summary", "must be a string", summary)
        ok = False
    if not ok:
        return None
    files = _operand_files(access) if access in ("read", "write") else None
    return Model(name, "the rule policy's programs", summary, options=options if options is not None else
                 spec("", known=False), cls=classifier, files=files, effects=effects,
                 subcommands=frozenset(subs) if subs else None)


def _canonical(options: Spec, option: str) -> str | None:
    if option.startswith("--"):
        hit = options.longs.get(option[2:])
        return hit
    if option.startswith("-") and len(option) == 2:
        return options.shorts.get(option[1])
    return None


def read_programs(value: Any, problems: Problems) -> dict[str, Model]:
    """The program models of a rule policy's `programs` (every problem reported)."""
    if not isinstance(value, Mapping):
        problems("programs", f"must be an object: program name -> its model (got {json_type(value)})", value)
        return {}
    out: dict[str, Model] = {}
    for name, entry in value.items():
        if not isinstance(name, str) or not _NAME.match(name):
            problems(f"programs.{name}", "a program name is a command's name (letters, digits, `_.+-`)", name)
            continue
        model = _model(name, entry, problems)
        if model is not None:
            out[name] = model
    return out
