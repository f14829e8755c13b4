"""Side-effect classes: the built-in catalogue of what common commands and tools do.

Four classes, from least to most severe:

``read-only``
    Looks, changes nothing: ``ls``, ``cat``, ``head``, ``grep``, ``rg``, ``find`` (without
    ``-delete``/``-exec``), ``pwd``, ``echo``, ``wc``, ``diff``, ``which``, ``cd``;
    ``git status|log|diff|show|blame|branch|remote -v|rev-parse|ls-files|fetch --dry-run``;
    ``gh pr view|list|diff|checks``, ``gh issue view|list``, ``gh api`` (a GET);
    ``curl`` without a body or a non-GET method; ``npm ls|view|outdated``, ``pip list|show|freeze``;
    ``sed`` without ``-i``; ``docker ps|images|logs``, ``kubectl get|describe|logs``,
    ``terraform plan``. Tools: ``read``, ``Glob``, ``Grep``, ``LS``, ``webSearch``, ``WebFetch``.
    Bookkeeping tools (``TodoWrite``, ``TodoRead``, ``TaskCreate``/``TaskUpdate``/``TaskList``/
    ``TaskGet``..., ``update_plan``) are read-only too, and allowed unless ``tools`` says otherwise.

``local-mutation``
    Changes the workspace or the machine, recoverably: ``touch``, ``mkdir``, ``cp``, ``mv``,
    ``ln``, ``chmod``, ``tee``, ``sed -i``, ``rm`` of single files (no ``-r``/``-f``),
    ``rmdir``, ``tar``/``unzip``, ``kill``;
    ``git add|commit|checkout <branch>|switch|merge|rebase|stash|fetch|pull|clone|tag|reset`` (soft);
    ``npm install|ci|uninstall``, ``pip install``, ``curl -o``, ``wget``, ``docker build|pull``.
    Tools: the edit tools ``write``, ``edit``, ``MultiEdit``, ``NotebookEdit``.

``remote-mutation``
    Changes something beyond the machine: ``git push``, ``curl -X POST`` (or any body,
    form or upload), ``npm publish`` (also yarn/pnpm), ``twine upload``, ``cargo publish``,
    ``gh pr create|merge|close|comment|edit``, ``gh issue create|close|comment``,
    ``gh release create``, ``gh api -X POST`` or with fields, ``docker push``,
    ``kubectl apply|create|patch|scale``, ``terraform apply``, ``scp``, ``rsync``.

``destructive``
    Destroys data beyond easy recovery: ``rm -r``/``rm -f`` (any spelling: ``-rf``, ``-fr``,
    ``-R``, ``--recursive``, ``--force``), ``git reset --hard``, ``git clean`` (unless
    ``-n``), ``git checkout -- <path>``/``git restore``, ``git push --force``/``--delete``,
    ``git stash drop|clear``, ``git branch -D``, ``dd``, ``mkfs`` (and ``mkfs.*``),
    ``shred``, ``wipefs``, ``fdisk``, ``truncate``, ``find -delete``, ``pkill``,
    ``killall``, ``shutdown``/``reboot``, ``npm unpublish``, ``gh repo delete``,
    ``kubectl delete``, ``terraform destroy``, ``docker rm|rmi|system prune``.

Anything else has no class (``None``): an unknown command (``python``, ``make``,
``npm run``...) or tool (an MCP tool) is decided by the rules or the policy's default,
never by a guessed class. A command that runs another (``sudo``, ``env``, ``timeout``,
``xargs``, ``find -exec``, ``bash -c``) is looked through: the inner command is a
simple command of its own, classified on its own; the wrapper itself is read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

READ_ONLY = "read-only"
LOCAL = "local-mutation"
REMOTE = "remote-mutation"
DESTRUCTIVE = "destructive"
CLASSES = (READ_ONLY, LOCAL, REMOTE, DESTRUCTIVE)
SEVERITY = {name: i for i, name in enumerate(CLASSES)}

EDIT_TOOLS = frozenset({"write", "edit", "MultiEdit", "NotebookEdit"})
READ_TOOLS = frozenset({"read", "Read", "Glob", "Grep", "LS", "webSearch", "WebSearch", "WebFetch", "webFetch"})
BOOKKEEPING_TOOLS = frozenset(
    {"TodoWrite", "TodoRead", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TaskOutput",
     "update_plan", "todo_write", "todowrite", "todoread"}
)


def is_bookkeeping(tool: str) -> bool:
    return tool in BOOKKEEPING_TOOLS


def most_severe(classes) -> str | None:
    best = None
    for cls in classes:
        if cls is not None and (best is None or SEVERITY[cls] > SEVERITY[best]):
            best = cls
    return best


def _short_flags(words) -> set[str]:
    """Single-letter options of a command, `-rf` read as `r` and `f`."""
    flags: set[str] = set()
    for w in words:
        if w == "--":
            break
        if len(w) > 1 and w[0] == "-" and w[1] != "-":
            flags.update(w[1:])
    return flags


def _long(words, *names) -> bool:
    return any(w == n or w.startswith(n + "=") for w in words for n in names)


def _rm(words):
    flags = _short_flags(words[1:])
    if flags & {"r", "R", "f"} or _long(words, "--recursive", "--force"):
        return DESTRUCTIVE
    return LOCAL


def _sed(words):
    return LOCAL if "i" in _short_flags(words[1:]) or _long(words, "--in-place") else READ_ONLY


def _find(words):
    if "-delete" in words:
        return DESTRUCTIVE
    if any(w in ("-fprint", "-fprint0", "-fprintf", "-fls") for w in words):
        return LOCAL
    return READ_ONLY  # -exec: the inner command is classified on its own


def _sort(words):
    return LOCAL if "o" in _short_flags(words[1:]) or _long(words, "--output") else READ_ONLY


_GIT_READ = frozenset({"status", "log", "diff", "show", "blame", "rev-parse", "describe", "ls-files",
                       "ls-tree", "ls-remote", "cat-file", "grep", "shortlog", "reflog", "rev-list",
                       "whatchanged", "help", "version", "--version", "show-ref", "name-rev",
                       "merge-base", "check-ignore", "count-objects", "var", "for-each-ref"})
_GIT_LOCAL = frozenset({"add", "commit", "switch", "merge", "rebase", "cherry-pick", "revert", "init",
                        "clone", "fetch", "pull", "mv", "rm", "apply", "am", "gc", "prune", "worktree",
                        "submodule", "notes", "bisect", "format-patch", "restore-staged", "sparse-checkout"})


def _git(words):
    args = list(words[1:])
    # skip global options: -C dir, -c k=v, --git-dir=..., --no-pager
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") and args:
            args.pop(0)
    if not args:
        return READ_ONLY
    sub, rest = args[0], args[1:]
    flags = _short_flags(rest)
    if sub == "push":
        if flags & {"f", "d"} or _long(rest, "--force", "--force-with-lease", "--delete", "--mirror", "--prune") \
                or any(r.startswith(":") or r.startswith("+") for r in rest):
            return DESTRUCTIVE
        return REMOTE
    if sub == "reset":
        return DESTRUCTIVE if _long(rest, "--hard", "--merge", "--keep") else LOCAL
    if sub == "clean":
        return READ_ONLY if "n" in flags or _long(rest, "--dry-run") else DESTRUCTIVE
    if sub == "restore":
        staged_only = ("--staged" in rest or "S" in flags) and not ("--worktree" in rest or "W" in flags)
        return LOCAL if staged_only else DESTRUCTIVE
    if sub == "checkout":
        if "--" in rest or "." in rest or "f" in flags or _long(rest, "--force"):
            return DESTRUCTIVE
        return LOCAL
    if sub == "stash":
        if rest[:1] and rest[0] in ("list", "show"):
            return READ_ONLY
        return DESTRUCTIVE if rest[:1] and rest[0] in ("drop", "clear") else LOCAL
    if sub == "branch":
        if "D" in flags or ("d" in flags and "f" in flags) or _long(rest, "--force"):
            return DESTRUCTIVE
        if flags & {"d", "m", "M", "c", "C", "u"} or _long(rest, "--delete", "--move", "--set-upstream-to"):
            return LOCAL
        positional = [r for r in rest if not r.startswith("-")]
        return LOCAL if positional and not _long(rest, "--list", "--contains", "--merged") else READ_ONLY
    if sub in ("tag", "remote", "config"):
        positional = [r for r in rest if not r.startswith("-")]
        if sub == "remote" and (not positional or positional[0] in ("show", "get-url")):
            return READ_ONLY
        if sub == "config" and (_long(rest, "--get", "--list", "--get-all", "--get-regexp") or "l" in flags
                                or len(positional) <= 1 and not _long(rest, "--unset", "--unset-all")):
            return READ_ONLY
        if sub == "tag" and not positional:
            return READ_ONLY
        return LOCAL
    if sub in ("filter-branch", "filter-repo", "update-ref") and (sub != "update-ref" or "d" in flags):
        return DESTRUCTIVE
    if sub in _GIT_READ:
        return READ_ONLY
    if sub in _GIT_LOCAL or sub == "update-ref":
        return LOCAL
    return None


_GH_WRITE_VERBS = frozenset({"create", "merge", "close", "reopen", "comment", "edit", "review", "ready",
                             "upload", "transfer", "pin", "unpin", "lock", "unlock", "set", "fork",
                             "rerun", "cancel", "run", "enable", "disable", "add", "archive", "rename"})
_GH_DESTROY_VERBS = frozenset({"delete"})


def _gh(words):
    args = [w for w in words[1:]]
    if not args:
        return READ_ONLY
    if args[0] == "api":
        rest = args[1:]
        method = None
        for i, w in enumerate(rest):
            if w in ("-X", "--method") and i + 1 < len(rest):
                method = rest[i + 1].upper()
            elif w.startswith("--method="):
                method = w.split("=", 1)[1].upper()
            elif w.startswith("-X") and len(w) > 2:
                method = w[2:].upper()
        if method == "DELETE":
            return DESTRUCTIVE
        if method in ("POST", "PUT", "PATCH") or any(
                w in ("-f", "-F", "--field", "--raw-field", "--input") for w in rest):
            return REMOTE
        return READ_ONLY
    verb = args[1] if len(args) > 1 else ""
    if verb in _GH_DESTROY_VERBS:
        return DESTRUCTIVE
    if verb in _GH_WRITE_VERBS or args[0] in ("auth",) and verb in ("login", "logout"):
        return REMOTE
    return READ_ONLY


def _curl(words):
    rest = words[1:]
    method = None
    for i, w in enumerate(rest):
        if w in ("-X", "--request") and i + 1 < len(rest):
            method = rest[i + 1].upper()
        elif w.startswith("-X") and len(w) > 2:
            method = w[2:].upper()
        elif w.startswith("--request="):
            method = w.split("=", 1)[1].upper()
    body = any(
        w in ("-d", "-F", "-T", "--json", "--form", "--upload-file") or w.startswith("--data")
        or w.startswith("--form") or (w.startswith("-d") and len(w) > 2)
        for w in rest
    )
    if body or (method and method not in ("GET", "HEAD", "OPTIONS")):
        return REMOTE
    if any(w in ("-o", "-O", "--output", "--remote-name", "-J") or w.startswith("--output=") for w in rest):
        return LOCAL
    return READ_ONLY


def _wget(words):
    rest = words[1:]
    if any(w.startswith("--post-") or w.startswith("--method") or w.startswith("--body") for w in rest):
        return REMOTE
    return LOCAL


def _package_manager(words):
    sub = words[1] if len(words) > 1 else ""
    if sub in ("publish", "deprecate", "dist-tag", "owner", "access", "adduser", "login", "logout", "team"):
        return REMOTE
    if sub == "unpublish":
        return DESTRUCTIVE
    if sub in ("ls", "list", "view", "info", "show", "outdated", "why", "explain", "search", "help",
               "--version", "-v", "whoami", "doctor", "root", "prefix", "bin", "config", "get"):
        if sub == "config" and len(words) > 2 and words[2] not in ("get", "list", "ls"):
            return LOCAL
        return READ_ONLY
    if sub in ("install", "i", "ci", "add", "uninstall", "remove", "rm", "un", "update", "up",
               "upgrade", "link", "unlink", "prune", "dedupe", "init", "pack", "rebuild", "audit"):
        return LOCAL if sub != "audit" or "fix" in words else READ_ONLY
    return None  # run, test, exec, start, npx...: runs project code


def _pip(words):
    sub = words[1] if len(words) > 1 else ""
    if sub in ("list", "show", "freeze", "check", "help", "--version", "search", "index", "inspect"):
        return READ_ONLY
    if sub in ("install", "uninstall", "download", "wheel", "cache"):
        return LOCAL
    return None


def _sub(table: Mapping[str, str], default=None) -> Callable:
    def classify_sub(words):
        sub = words[1] if len(words) > 1 else ""
        return table.get(sub, default)
    return classify_sub


def _tar(words):
    mode = words[1] if len(words) > 1 else ""
    return READ_ONLY if ("t" in mode and not mode.startswith("--")) or "--list" in words else LOCAL


_CONSTANT: dict[str, str] = {}
for _name in ("ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack",
              "pwd", "echo", "printf", "wc", "uniq", "diff", "cmp", "comm", "file", "stat", "du", "df",
              "which", "whereis", "type", "whoami", "id", "date", "printenv", "uname", "hostname",
              "tree", "basename", "dirname", "realpath", "readlink", "true", "false", "test", "[",
              "jq", "cut", "tr", "column", "nl", "od", "xxd", "hexdump", "md5sum", "sha1sum",
              "sha256sum", "sha512sum", "cksum", "ps", "free", "uptime", "cd", "pushd", "popd",
              "man", "help", "history", "fold", "fmt", "rev", "tac", "paste", "join", "expand",
              "strings", "lsof", "env", "nohup", "time", "nice", "timeout", "stdbuf", "command",
              "builtin", "xargs", "watch", "locale", "tty", "groups", "seq", "yes", "sleep", "wait",
              "exit", "return", "set", "shopt", "alias", "hash", "getconf", "nproc", "arch", "lscpu",
              "sort", "sed", "find", "ionice"):
    _CONSTANT[_name] = READ_ONLY
for _name in ("touch", "mkdir", "cp", "mv", "ln", "chmod", "chown", "chgrp", "tee", "patch", "unzip",
              "zip", "gzip", "gunzip", "bzip2", "xz", "unxz", "rmdir", "install", "kill", "export",
              "unset", "declare", "local", "readonly", "typeset", "mktemp", "git-lfs", "source", "."):
    _CONSTANT[_name] = LOCAL
for _name in ("scp", "rsync", "twine", "sftp", "ftp"):
    _CONSTANT[_name] = REMOTE
for _name in ("dd", "mkfs", "shred", "wipefs", "fdisk", "sfdisk", "parted", "truncate", "pkill",
              "killall", "shutdown", "reboot", "halt", "poweroff", "mkswap", "srm"):
    _CONSTANT[_name] = DESTRUCTIVE
_CONSTANT["export"] = READ_ONLY  # shell state only
_CONSTANT["unset"] = READ_ONLY
_CONSTANT["declare"] = READ_ONLY
_CONSTANT["local"] = READ_ONLY
_CONSTANT["readonly"] = READ_ONLY
_CONSTANT["typeset"] = READ_ONLY
_CONSTANT["source"] = None  # type: ignore[assignment]  # runs a script we cannot see
_CONSTANT["."] = None  # type: ignore[assignment]

_BY_NAME: dict[str, Callable] = {
    "rm": _rm, "sed": _sed, "find": _find, "sort": _sort, "git": _git, "gh": _gh, "curl": _curl,
    "wget": _wget, "npm": _package_manager, "yarn": _package_manager, "pnpm": _package_manager,
    "bun": _package_manager, "pip": _pip, "pip3": _pip, "uv": _sub({"pip": LOCAL, "add": LOCAL,
    "remove": LOCAL, "sync": LOCAL, "lock": LOCAL, "publish": REMOTE}), "tar": _tar,
    "cargo": _sub({"publish": REMOTE, "yank": REMOTE, "add": LOCAL, "remove": LOCAL, "fetch": LOCAL,
                   "tree": READ_ONLY, "metadata": READ_ONLY, "search": READ_ONLY, "--version": READ_ONLY}),
    "docker": _sub({"ps": READ_ONLY, "images": READ_ONLY, "logs": READ_ONLY, "inspect": READ_ONLY,
                    "version": READ_ONLY, "info": READ_ONLY, "build": LOCAL, "pull": LOCAL, "tag": LOCAL,
                    "push": REMOTE, "login": REMOTE, "rm": DESTRUCTIVE, "rmi": DESTRUCTIVE,
                    "system": DESTRUCTIVE, "volume": DESTRUCTIVE, "kill": LOCAL, "stop": LOCAL}),
    "kubectl": _sub({"get": READ_ONLY, "describe": READ_ONLY, "logs": READ_ONLY, "explain": READ_ONLY,
                     "version": READ_ONLY, "top": READ_ONLY, "diff": READ_ONLY, "apply": REMOTE,
                     "create": REMOTE, "patch": REMOTE, "scale": REMOTE, "rollout": REMOTE,
                     "edit": REMOTE, "label": REMOTE, "annotate": REMOTE, "set": REMOTE,
                     "exec": REMOTE, "delete": DESTRUCTIVE, "drain": DESTRUCTIVE}),
    "terraform": _sub({"plan": READ_ONLY, "show": READ_ONLY, "validate": READ_ONLY, "fmt": LOCAL,
                       "init": LOCAL, "apply": REMOTE, "import": REMOTE, "destroy": DESTRUCTIVE}),
}


def classify_words(words: tuple[str, ...] | list[str]) -> str | None:
    """The side-effect class of one simple command (already unquoted, path dropped)."""
    if not words:
        return None
    name = words[0]
    fn = _BY_NAME.get(name)
    if fn is not None:
        return fn(words)
    if name.startswith("mkfs."):
        return DESTRUCTIVE
    return _CONSTANT.get(name)


def classify_tool(tool: str) -> str | None:
    """The class of a non-shell tool (None for unknown tools such as MCP tools)."""
    if tool in EDIT_TOOLS:
        return LOCAL
    if tool in READ_TOOLS or tool in BOOKKEEPING_TOOLS:
        return READ_ONLY
    return None
