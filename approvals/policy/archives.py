"""What an extraction writes: the member names of a tar or zip archive on disk, and the
files a patch names.

`tar -xf a.tgz` and `unzip a.zip` write files they do not name on their command line; an
archive the agent made or downloaded can hold `.git/hooks/pre-commit`, a `sub/.git`
pointing git at settings elsewhere, `.claude/settings.json`, or a link out of the
workspace. When the policy reads the file system (a run's PathContext), the archive's
member list is read — names only, nothing is extracted or run — and each member is
decided as a write (a link member as a link to its target). When it cannot be read
(not there yet, read from a pipe, a compression Python does not read, too many
members), what the command writes is not known before it runs: `None`.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import tarfile
import zipfile
from typing import NamedTuple

# Beyond this many members the list is not read to its end: the extraction is asked about.
MEMBER_LIMIT = 2_000
# A compressed tar is decompressed to be listed: beyond this size it is not (the decision
# would wait seconds), and the extraction is asked about. A zip's list is its directory.
COMPRESSED_TAR_LIMIT = 16 * 1024 * 1024


class Member(NamedTuple):
    name: str  # the path it is written to, relative to the extraction's directory
    link: str | None = None  # a link member: its target (as stored)
    hard: bool = False  # a hard link (its target names another member)


def members(path: str, kind: str, *, strip: int = 0, junk: bool = False) -> list[Member] | None:
    """The members `kind` ("tar" or "zip") extracts from the archive at `path`, with tar's
    `--strip-components` and unzip's `-j` applied; None when they cannot be known."""
    try:
        found = _tar(path) if kind == "tar" else _zip(path)
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, ValueError, NotImplementedError,
            RuntimeError, UnicodeDecodeError):
        return None
    if found is None:
        return None
    out = []
    for member in found:
        parts = [p for p in member.name.split("/") if p not in ("", ".")]
        if junk:
            parts = parts[-1:]
        if strip:
            if len(parts) <= strip:
                continue
            parts = parts[strip:]
        if parts:
            out.append(member._replace(name="/".join(parts)))
    return out


def _tar(path: str) -> list[Member] | None:
    out: list[Member] = []
    with open(path, "rb") as raw:
        magic = raw.read(6)
    compressed = magic[:2] == b"\x1f\x8b" or magic[:3] == b"BZh" or magic == b"\xfd7zXZ\x00"
    if compressed and os.path.getsize(path) > COMPRESSED_TAR_LIMIT:
        return None
    with tarfile.open(path, "r:*") as archive:
        for info in archive:
            if len(out) >= MEMBER_LIMIT:
                return None
            if info.issym():
                out.append(Member(info.name, info.linkname))
            elif info.islnk():
                out.append(Member(info.name, info.linkname, hard=True))
            else:
                out.append(Member(info.name))
    return out


def _zip(path: str) -> list[Member] | None:
    out: list[Member] = []
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        if len(infos) > MEMBER_LIMIT:
            return None
        for info in infos:
            name = info.filename.replace("\\", "/")  # unzip reads `\\` as a separator
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode) and info.file_size <= 4096:
                # unzip makes a link whose target is the member's content
                target = archive.read(info).decode("utf-8", errors="replace")
                out.append(Member(name, target))
            else:
                out.append(Member(name))
    return out


def link_target(member: Member) -> str:
    """Where a link member points, relative to the extraction's directory when relative
    (a symlink's target is read from its own directory; a hard link's names a member)."""
    if member.link is None:
        raise ValueError("not a link member")
    if member.link.startswith("/") or member.hard:
        return member.link
    return posixpath.normpath(posixpath.join(posixpath.dirname(member.name), member.link))


# A patch read to find its files: at most this much of it.
PATCH_LIMIT = 4 * 1024 * 1024
_DIFF_NAME = re.compile(r"^(?:\+\+\+|---|\*\*\*) (.+?)(?:\t.*)?$|^diff --git (.+)$|^(?:rename|copy) (?:from|to) (.+)$"
                        r"|^Index: (.+)$")
_QUOTED_OR_WORD = re.compile(r'"(?:[^"\\]|\\.)*"|\S+')
_C_ESCAPES = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


def _unquoted(name: str) -> str:
    """A name as git writes it: C-quoted (`"b/.cl\\141ude/x"`) when it holds special
    characters; git apply and GNU patch unquote it, and so is it read here."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and i + 3 < len(body) + 1 and all(c in "01234567" for c in body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
            out += _C_ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += char.encode()
        i += 1
    return out.decode("utf-8", errors="replace")


def patch_text(path: str) -> str | None:
    """A patch file's text (None: not there, unreadable or too large to read here)."""
    try:
        if os.path.getsize(path) > PATCH_LIMIT:
            return None
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None


def patch_targets(text: str, strip: int | None) -> list[Member]:
    """The files a unified, context or git patch names (old and new names, renames and
    copies), as `patch -pN` reads them: `strip` leading components dropped; `None` (no
    `-p`: GNU patch may keep the whole name or only its base) gives every reading."""
    names: list[str] = []
    for line in text.splitlines():
        if line.startswith("*** ") and line.rstrip().endswith("****"):
            continue  # a context diff's hunk header (`*** 1,3 ****`), not a file name
        found = _DIFF_NAME.match(line)
        if found is None:
            continue
        if found.group(2) is not None:
            names += _QUOTED_OR_WORD.findall(found.group(2))  # `diff --git a/x "b/y z"`: each word
        else:
            names.append((found.group(1) or found.group(3) or found.group(4)).strip())
    out: list[Member] = []
    for name in dict.fromkeys(_unquoted(n) for n in names):
        if not name or name == "/dev/null":
            continue
        parts = [p for p in name.split("/") if p not in ("", ".")]
        levels = range(len(parts)) if strip is None else [strip]
        absolute = name.startswith("/") and strip in (None, 0)
        for level in levels:
            if level < len(parts):
                kept = "/".join(parts[level:])
                out.append(Member("/" + kept if absolute and level == 0 else kept))
    return out
