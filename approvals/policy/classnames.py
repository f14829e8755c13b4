"""The side-effect classes, least to most severe (`classes.py` says what each means)."""

from __future__ import annotations

READ_ONLY = "read-only"
LOCAL = "local-mutation"
OUTSIDE = "outside-workspace"
REMOTE = "remote-mutation"
DESTRUCTIVE = "destructive"
PROTECTED = "protected"
CLASSES = (READ_ONLY, LOCAL, OUTSIDE, REMOTE, DESTRUCTIVE, PROTECTED)
CLASS_SEVERITY = {name: i for i, name in enumerate(CLASSES)}  # a class -> its rank, 0 the least severe
