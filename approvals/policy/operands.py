"""Which words of a command name files it reads, writes or links to: its model's files
facet (`programs/`).

Reads: `cat`, `less`, `head`, `tail` and the other filters, `grep`/`rg` operands after the
pattern (and `-f` files), `sed`/`awk`/`jq` operands after the script (and jq's `--rawfile`/
`--slurpfile` files and `-L` module directories), `source`/`.`, `cp`, `scp` and `rsync`
sources, `tar c` members, `diff`, `curl -T`/`-d @file`/`-F x=@file`, `wget --post-file`,
git's (`git show HEAD:.env`, `git log -p -- .env`, `git grep KEY`, `git add -f .env`…),
`< file` redirections. Writes: `tee`, `touch`, `mkdir`, `rm`, `rmdir`, `shred`, `truncate`,
`chmod`/`chown`/`chgrp` targets, `cp`/`mv`/`install` destinations (and `mv` sources), `ln`
link names, `sed -i` files, `dd of=`, `sort -o`, `tar x` into its `-C` directory, `unzip
-d`, `curl -o`, `wget -O`/`-P`, `git config --global`, `sqlite3` databases, editors, and
`>`/`>>` redirections. `ln -s TARGET` is a link: a target outside the workspace makes the
command `outside-workspace`.
"""

from __future__ import annotations

from .fileuse import FileUse
from .options import Invocation
from .programs.kit import Words
from .programs.model import Model
from .programs.registry import MODELS, model_of

# Every program a command of which may name files (the others' path checks are skipped).
NAMES_FILES = frozenset(name for name, model in MODELS.items() if model.files is not None or model.file_options)


def may_name_files(inv: Invocation, model: Model | None = None) -> bool:
    """Whether a command may name files it reads or writes (`git status` names none)."""
    if model is None:
        model = MODELS.get(inv.program)
    return model is not None and model.may_name_files(inv)


def file_uses(inv: Invocation, words: Words, model: Model | None = None) -> list[FileUse]:
    """The files a command (read by meaning) reads, writes or links to (`model`: a rule
    policy's own model of the program)."""
    if model is None:
        model = model_of(inv.program)
    if model is None:
        return []
    found = model.files(inv, words) if model.files is not None else []
    if model.file_options and not model.file_options.isdisjoint(inv.values):
        # the files its options' effects name, unless its files facet found them already
        seen = {(u.access, u.word, u.at) for u in found}
        for option in sorted(model.file_options & set(inv.values)):
            effect = model.effects[option]
            access = "read" if effect == "reads" else "write"
            for value, at in zip(inv.values[option], inv.value_at.get(option, ()), strict=False):
                if value and (access, value, (at,)) not in seen:
                    found.append(FileUse(access, value, (at,), effect == "writes-tree"))
    return found
