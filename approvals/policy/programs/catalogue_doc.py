"""The catalogue of what each program's model says, as Markdown (`docs/programs.md`).

Written by `manage.py policy_docs` and compared with the file by a test, so it never says
what the models do not.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

from .model import UNCLASSIFIED, Model
from .registry import FAMILIES, MODELS
from .spec import Spec

_EFFECT_WORDS = {"reads": "reads FILE", "writes": "writes FILE", "writes-tree": "writes into DIR",
                 "code": "runs code", "network": "network", "settings": "reads settings (unverified)"}

_HEADER = """# Programs the policy knows

<!-- Generated from the program models (`approvals/policy/programs/`) by
`manage.py policy_docs`; a test keeps it true. Do not edit by hand. -->

Each program Gatehouse reads by meaning has one model. This page lists, family by family,
what each model declares: its names, its side-effect class, the options it knows (an
option, a subcommand or an operand shape not listed leaves a command *unverified*, which a
class rule never allows on its own: see `approvals/policy/unverified.py`), what options do
beyond looking, and the facets it has:

- **files**: it names files it reads or writes (each decided by its path);
- **code**: it can run code the policy cannot read (at least asked, `commands.interpreter`);
- **wrapper**: it runs another command, which is read as a command of its own;
- **network**: it talks to the network (`commands.network` floors);
- **environment**: it sets variables (judged by the variable) or shows the environment;
- **operand checks**: what its model cannot vouch for in its operands (a repository named by
  its address, a secret read) is unverified or asked about;
- **the workspace's settings**: settings or hooks of the workspace's it runs or reads (a
  repository's hooks, a venv's `pip.conf`, a project's `.ackrc`) make it ask.

A program named by a path inside the workspace (`./ls`, `.venv/bin/pip`) is the workspace's
own code: never allowed as the program of that name (`commands.workspace-program`).

A program with no class is decided by the rules or the policy's default; "(unknown)" marks
one the policy does not know what it does with its words (they may be a command it runs).
"""


def _names(spec: Spec) -> list[str]:
    """The option spellings a spec declares, grouped by what they stand for."""
    by_canon: dict[str, list[str]] = {}
    for letter, canon in spec.shorts.items():
        if len(letter) == 1:
            by_canon.setdefault(canon, []).append("-" + letter)
    for name, canon in spec.longs.items():
        by_canon.setdefault(canon, []).append("--" + name)
    for canon in sorted(spec.values | spec.attached | spec.flags):
        by_canon.setdefault(canon, [canon])
    out = []
    for canon in sorted(by_canon, key=lambda c: (c.lstrip("-").lower(), c)):
        spelled = "/".join(dict.fromkeys(by_canon[canon]))
        value = " X" if canon in spec.values and canon not in spec.attached else "[=X]" if canon in spec.attached \
            else ""
        out.append(f"`{spelled}{value}`")
    return out


def _options(spec: Spec, known: bool = True) -> str:
    if not spec.known:
        return "options not modelled" + (" (any option leaves a command unverified)" if known else "")
    names = _names(spec)
    extra = []
    if spec.numeric:
        extra.append("`-NUMBER`")
    if spec.any_option:
        extra.append("any option word (harmless to it)")
    if spec.negatable:
        extra.append("`--no-` forms")
    if not names and not extra:
        return "no options"
    return ", ".join(names + extra)


def _class(model: Model) -> str:
    cls = model.cls
    if cls == UNCLASSIFIED:
        return "(unknown)"
    if cls is None:
        return "no class"
    if isinstance(cls, str):
        return cls
    table: Mapping[str, str] | None = getattr(cls, "table", None)
    if table:
        grouped: dict[str, list[str]] = {}
        for sub, value in table.items():
            grouped.setdefault(value, []).append(f"`{sub}`")
        parts = [f"{value}: {', '.join(subs)}" for value, subs in grouped.items()]
        return "by subcommand (" + "; ".join(parts) + "; others: no class)"
    doc = inspect.getdoc(cls)
    return "by its subcommand, options and operands" + (f" — {doc.splitlines()[0]}" if doc else "")


def _facets(model: Model) -> list[str]:
    out = []
    if model.files is not None or model.file_options:
        out.append("files")
    if model.code is not None or model.runs_scripts or "code" in model.effects.values():
        out.append("code" + (f" ({model.runs_scripts})" if model.runs_scripts else ""))
    if model.inner is not None:
        out.append("wrapper")
    if model.network:
        out.append("network")
    if model.declares or model.assigns_names or model.environment or model.shows_environment:
        out.append("environment")
    if model.verify is not None or model.reveals is not None:
        out.append("operand checks")
    if model.workspace_code is not None:
        out.append("the workspace's settings")
    return out


def _program(model: Model) -> list[str]:
    names = f"`{model.name}`" + (f" (also {', '.join(f'`{a}`' for a in model.aliases)})" if model.aliases else "")
    if model.prefixes:
        names += f" (and `{model.prefixes[0]}*`)"
    lines = [f"### {names}", "", model.summary[:1].upper() + model.summary[1:] + "." if model.summary else "", ""]
    lines.append(f"- class: {_class(model)}")
    facets = _facets(model)
    if facets:
        lines.append(f"- facets: {', '.join(facets)}")
    spec = model.options
    lines.append(f"- options: {_options(spec, model.known)}")
    if model.effects:
        effects = ", ".join(f"`{o}` {_EFFECT_WORDS[e]}" for o, e in sorted(model.effects.items()))
        lines.append(f"- what options do: {effects}")
    for decision, word in (("allow", "allowed"), ("ask", "asked"), ("deny", "denied")):
        if model.examples.get(decision):
            shown = ", ".join(f"`{c}`" for c in model.examples[decision])
            lines.append(f"- {word} by the default policy (no floor): {shown}")
    if spec.subcommands:
        lines.append(f"- subcommands with their own options: {', '.join(f'`{s}`' for s in sorted(spec.subcommands))}")
        for sub in sorted(spec.subcommands):
            lines.append(f"  - `{model.name} {sub}`: {_options(spec.subcommands[sub], model.known)}")
    lines.append("")
    return lines


def programs_markdown() -> str:
    """The whole catalogue (`docs/programs.md`)."""
    lines = [_HEADER]
    total = 0
    for family in FAMILIES:
        models = sorted(family.MODELS, key=lambda m: m.name)
        total += len(models)
        doc = (inspect.getdoc(family) or "").split("\n\n")[0].replace("\n", " ")
        lines += [f"## {family.FAMILY[:1].upper() + family.FAMILY[1:]}", "", doc, "",
                  "Programs: " + ", ".join(f"`{m.name}`" for m in models) + ".", ""]
        for model in models:
            lines += _program(model)
    lines.insert(1, f"{total} programs in {len(FAMILIES)} families.\n")
    assert total == len(MODELS)
    return "\n".join(lines).rstrip() + "\n"
