"""The client side's file access: only inside the run's workspace, symlinks resolved."""

from __future__ import annotations

from pathlib import Path

MAX_READ_BYTES = 8 * 1024 * 1024


class OutsideWorkspace(Exception):
    """A path that resolves outside the workspace (directly, through `..` or a symlink)."""


def resolve_inside(workspace: Path, path: str) -> Path:
    """The real path `path` names, refused unless it lies inside the workspace."""
    root = Path(workspace).resolve()
    if not path or "\0" in path:
        raise OutsideWorkspace(f"not a usable path: {path!r}")
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise OutsideWorkspace(f"cannot resolve {path}: {exc}") from None
    if resolved != root and root not in resolved.parents:
        raise OutsideWorkspace(f"{path} is outside the run's workspace {root}")
    return resolved


def read_text(path: Path, line: int | None = None, limit: int | None = None) -> str:
    """The file's text (1-based `line`, at most `limit` lines), bounded in size."""
    with path.open("rb") as handle:
        data = handle.read(MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES:
        raise ValueError(f"{path.name} is larger than {MAX_READ_BYTES} bytes")
    text = data.decode("utf-8", errors="replace")
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    end = start + limit if limit is not None else None
    return "".join(lines[start:end])


def write_text(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
