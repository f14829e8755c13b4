"""Database shells: a query in a database file of the workspace is a local change.

What in a SQL shell's input runs a program, loads code, or reads or writes a file other
than its database is asked about: sqlite3's dot-commands (`.shell`, `.load`, `.read FILE`
of commands, `.output FILE`, `.import FILE`, `.backup`…), its file functions (`readfile`,
`writefile`, `edit`, `load_extension`), ATTACH and VACUUM INTO of any path; duckdb's too
(its `read_*`/`glob` table functions, COPY, EXPORT/IMPORT, INSTALL/LOAD of extensions).
"""

from __future__ import annotations

import re

from ..classnames import LOCAL
from ..command import SimpleCommand
from ..fileuse import FileUse
from .invocation import Invocation
from .kit import CodeCheck, Examples, Words, operands, stdin_kind, with_examples
from .model import Model
from .spec import flags

FAMILY = "database shells"

_SQL_DOT = r"(?:^|[\s;])\.(?:shell|system|load|read|output|once|import|save|backup|restore|open|excel|log|cd|clone|" \
    r"archive|ar|edit|nonce|sha3sum)\b"
_SQLITE_CODE = re.compile(_SQL_DOT + r"|\b(?:readfile|writefile|edit|load_extension|fts3_tokenizer)\s*\(|\battach\b"
                          r"|\bvacuum\b[^;]*\binto\b", re.IGNORECASE)
_DUCKDB_CODE = re.compile(_SQL_DOT + r"|\b(?:read_\w+|glob|sniff_csv|parquet_\w+)\s*\(|\b(?:attach|copy|export|import|"
                          r"install|load|secret)\b|'[^']*\.(?:csv|parquet|json|jsonl|ndjson|tsv|txt|gz)'", re.IGNORECASE)
_SQL_SCRIPT_OPTIONS = ("-init", "--init", "-A", "-archive", "--archive", "-f", "-c", "-s")


def _sql_shell(pattern: re.Pattern[str]) -> CodeCheck:
    def check(inv: Invocation, cmd: SimpleCommand) -> str | None:
        program = inv.program
        if cmd.stdin is not None and (cmd.stdin != "heredoc" or cmd.stdin_text is None
                                      or pattern.search(cmd.stdin_text)):
            return f"`{program}` runs the commands on its {stdin_kind(cmd)} (they can run programs and read or " \
                   "write any file)"
        if any(w in _SQL_SCRIPT_OPTIONS or w.startswith(("-A", "--init=")) for w in cmd.words[1:]):
            return f"`{program}` runs commands from a file or an archive it is given"
        if any(pattern.search(w) for w in cmd.words[1:]) or any(i > 0 for i in cmd.dynamic_at):
            return f"`{program}` is told to run a program, load code, or read or write another file"
        return None
    return check


def _database(inv: Invocation, words: Words) -> list[FileUse]:
    """The database file (the first operand) is written."""
    return [FileUse("write", w, at) for w, at in operands(inv, words)[:1]]


_SHELL_FLAGS = ("-header -noheader -csv -json -line -list -column -box -table -markdown -html -quote -ascii -tabs "
                "-bail -batch -echo -readonly -safe -version -help -nofollow -interactive -stats -memtrace "
                "-no-rowid-in-view -escape")
_SQLITE = flags(_SHELL_FLAGS, "-separator -newline -nullvalue -cmd -mmap -vfs -maxsize -heap -pagecache -lookaside "
                "-init -A")
_DUCKDB = flags(_SHELL_FLAGS, "-separator -newline -nullvalue -cmd -c -s -f -init")

MODELS = [
    Model("sqlite3", FAMILY, "queries a database file (written); dot-commands and file functions are asked about",
          options=_SQLITE, cls=LOCAL, files=_database, code=_sql_shell(_SQLITE_CODE),
          effects={"-init": "code", "-A": "code"}),
    Model("duckdb", FAMILY, "queries a database file (written); file functions, COPY and extensions are asked about",
          options=_DUCKDB, cls=LOCAL, files=_database, code=_sql_shell(_DUCKDB_CODE),
          effects={"-init": "code", "-c": "code", "-s": "code", "-f": "code"}),
]

_EXAMPLES: dict[str, Examples] = {
    "sqlite3": {"allow": ("sqlite3 build/app.db 'select * from users'", "sqlite3 -header -csv build/app.db .tables"),
                "ask": ("sqlite3 build/app.db '.shell id'", "sqlite3 build/app.db < build/x.sql")},
    "duckdb": {"allow": ("duckdb build/app.db 'select 1'",), "ask": ("duckdb build/app.db \"copy t to '/tmp/x.csv'\"",)},
}
MODELS = with_examples(MODELS, _EXAMPLES)
