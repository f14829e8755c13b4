"""The paths a git repository tracks, read from its index file (`.git/index`).

`git diff`, `git show`, `git log -p`, `git format-patch`, `git archive` and their kin print
the contents of tracked files without naming any: under `reads: deny: [".env*"]` a tracked
`.env` would be printed by a plain `git diff`. The policy judges such a command as a read
of every path the index holds (`git_operands.py`, `path_eval._tree_hit`), not of the whole
working tree, so an ignored, untracked `.env` does not stop `git diff`.

The index format (gitformat-index(5)): versions 2, 3 and 4 (4 compresses each path
against the previous one), SHA-1 or SHA-256 object names. An index that does not read as
one of those, or is larger than MAX_INDEX_BYTES, gives None: the caller then walks the
working tree instead (stricter). Results are cached by the file's size and modification
time.
"""

from __future__ import annotations

import functools
import os
import struct

MAX_INDEX_BYTES = 64 * 1024 * 1024
_HEADER = struct.Struct(">4sII")
_FLAGS = struct.Struct(">H")


def tracked_paths(index_file: str) -> tuple[str, ...] | None:
    """The paths in a git index (repository-relative, `/`-separated), or None when the
    file cannot be read as an index. A missing index (a new repository) tracks nothing."""
    try:
        stat = os.stat(index_file)
    except FileNotFoundError:
        return ()
    except OSError:
        return None
    if stat.st_size > MAX_INDEX_BYTES:
        return None
    return _cached(index_file, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _cached(index_file: str, size: int, mtime_ns: int) -> tuple[str, ...] | None:
    try:
        with open(index_file, "rb") as handle:
            data = handle.read(MAX_INDEX_BYTES + 1)
    except OSError:
        return None
    return parse_index(data)


def parse_index(data: bytes) -> tuple[str, ...] | None:
    if len(data) < _HEADER.size:
        return None
    signature, version, count = _HEADER.unpack_from(data)
    if signature != b"DIRC" or version not in (2, 3, 4):
        return None
    for hash_size in (20, 32):  # SHA-1, then SHA-256
        paths = _entries(data, version, count, hash_size)
        if paths is not None:
            return paths
    return None


def _entries(data: bytes, version: int, count: int, hash_size: int) -> tuple[str, ...] | None:
    end = len(data) - hash_size  # the file ends with a checksum of the same kind
    pos = _HEADER.size
    previous = b""
    out: list[str] = []
    fixed = 40 + hash_size  # stat fields (40 bytes) and the object name
    try:
        for _ in range(count):
            start = pos
            if pos + fixed + 2 > end:
                return None
            (flags,) = _FLAGS.unpack_from(data, pos + fixed)
            pos += fixed + 2
            if flags & 0x4000:
                if version < 3:
                    return None
                pos += 2  # extended flags
            if version == 4:
                strip, pos = _varint(data, pos)
                nul = data.index(b"\0", pos, end)
                if strip > len(previous):
                    return None
                name = previous[:len(previous) - strip] + data[pos:nul]
                pos = nul + 1
            else:
                nul = data.index(b"\0", pos, end)
                name = data[pos:nul]
                length = flags & 0x0FFF
                if length != 0x0FFF and length != len(name):
                    return None
                pos = start + ((pos - start + len(name) + 8) & ~7)
            if not name or name.startswith(b"/") or pos > end:
                return None
            previous = name
            out.append(name.decode("utf-8", "surrogateescape").rstrip("/"))
    except (ValueError, struct.error):
        return None
    return tuple(out)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (each continuation adds one before shifting)."""
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos
