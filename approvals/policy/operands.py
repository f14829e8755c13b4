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
from .programs.registry import MODELS, model_of

# Every program a command of which may name files (the others' path checks are skipped).
NAMES_FILES = frozenset(name for name, model in MODELS.items() if model.files is not None)


def may_name_files(inv: Invocation) -> bool:
    """Whether a command may name files it reads or writes (`git status` names none)."""
    model = MODELS.get(inv.program)
    return model is not None and model.may_name_files(inv)


def file_uses(inv: Invocation, words) -> list[FileUse]:
    """The files a command (read by meaning) reads, writes or links to."""
    model = model_of(inv.program)
    if model is None or model.files is None:
        return []
    return model.files(inv, words)
