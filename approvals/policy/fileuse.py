"""A file a command reads, writes or links to: what the file-operand catalogues
(the program models' files facets, `programs/`) find in a command's words."""

from __future__ import annotations

from typing import NamedTuple


class FileUse(NamedTuple):
    access: str  # "read", "write" or "link" (the target a new link points to)
    word: str  # the path as written (joined to a base directory where the command has one)
    at: tuple[int, ...]  # indices of the command's words it comes from (their run-time status applies)
    tree: bool = False  # the whole tree under the path (rm -r, grep -r, cp -r, mv, links)
    follow: bool = True  # acts on a symlink's target (False: rm, mv, a link's own name)
    deref: bool = False  # a tree read that follows the links it meets below the path (grep -R, zip -r)
    top: bool = False  # relative to the workspace root, wherever the command runs (git's `HEAD:PATH`)
    # an extraction into this directory: (the archive as written, "tar" or "zip", tar's
    # --strip-components, unzip's -j; "" for the archive: read from a pipe or renamed by a
    # --transform, so its members are not known); its members are writes (`archives.py`)
    extracts: tuple[str, str, int, bool] | None = None
    tracked: bool = False  # a read of what git tracks in the repository at the path (`git diff`, `git log -p`)
