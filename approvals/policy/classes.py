"""Side-effect classes: the built-in catalogue of what common commands and tools do.

Six classes, from least to most severe:

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
    Changes the workspace, recoverably: ``touch``, ``mkdir``, ``cp``, ``mv``,
    ``ln``, ``chmod``, ``tee``, ``sed -i``, ``rm`` of single files (no ``-r``/``-f``),
    ``rmdir``, ``tar``/``unzip``, ``kill``;
    ``git add|commit|checkout <branch>|switch|merge|rebase|stash|fetch|pull|clone|tag|reset`` (soft);
    ``pip install NAME``, ``bun install --ignore-scripts``, ``curl -o``, ``wget``,
    ``docker pull``, a query in ``sqlite3``.
    Tools: the edit tools ``write``, ``edit``, ``MultiEdit``, ``NotebookEdit``.

``outside-workspace``
    Writes a file outside the run's workspace (an edit tool, a file operand or a
    redirection), or creates a link whose target lies outside it. Decided by the path
    (``paths.py``), not by this catalogue.

``remote-mutation``
    Changes something beyond the machine: ``git push``, ``curl -X POST`` (or any body,
    form or upload, in any spelling: ``-d``, ``--data*``, ``-F``, ``-T``, ``-sXPOST``),
    ``wget --post-data``, ``http POST``, ``npm publish`` (also yarn/pnpm), ``twine upload``,
    ``cargo publish``, ``gh pr create|merge|close|comment|edit``, ``gh issue create|close|comment``,
    ``gh release create``, ``gh api -X POST`` or with fields, ``docker push``,
    ``kubectl apply|create|patch|scale``, ``terraform apply``, ``ssh``, ``scp``, ``rsync``,
    ``nc``, ``socat``.

``destructive``
    Destroys data beyond easy recovery: ``rm -r``/``rm -f`` (any spelling: ``-rf``, ``-fr``,
    ``-R``, ``--recursive``, ``--force``), ``git reset --hard``, ``git clean`` (unless
    ``-n``), ``git checkout -- <path>``/``git restore``, ``git push --force``/``--delete``,
    ``git stash drop|clear``, ``git branch -D``, ``dd``, ``mkfs`` (and ``mkfs.*``),
    ``shred``, ``wipefs``, ``fdisk``, ``truncate``, ``find -delete``, ``pkill``,
    ``killall``, ``shutdown``/``reboot``, ``npm unpublish``, ``gh repo delete``,
    ``kubectl delete``, ``terraform destroy``, ``docker rm|rmi|system prune``.

``protected``
    Writes the agent's own control files, shell start-up files, credentials, ``/etc`` or
    Gatehouse's ``var`` directory (``paths.py``). Never allowed by a grant or a mode.

Anything else has no class (``None``): an unknown command (``python``, ``make``,
``npm run``...) or tool (an MCP tool) is decided by the rules or the policy's default,
never by a guessed class, and stays unknown whatever it writes (``./build > out.log``).
So has a package manager's command that runs the project's own code, which the agent can
write: ``npm install|ci|uninstall|update|pack|rebuild|link`` (package.json's lifecycle
scripts, a ``binding.gyp``, and the ``git`` program the project's ``.npmrc`` names, even
with ``--ignore-scripts``), pnpm's (also ``.pnpmfile.cjs``), every ``yarn`` command (its
``yarnPath``), ``bun install`` without ``--ignore-scripts``, ``pip install`` of a local
project, with ``-e`` or from a requirements file or a local index, ``uv sync|add|remove|lock``
and ``uv pip install|sync|compile`` (the workspace's ``uv.toml`` can name a local index),
``terraform plan|validate|show`` (the workspace's provider programs),
``npm init NAME`` (runs ``create-NAME``); ``docker build`` (runs the Dockerfile's
commands, which can copy and print any file of the workspace) and ``cargo fetch|tree|metadata``
(they run the ``rustc`` the workspace's ``.cargo/config.toml`` names). A command that runs another (``sudo``, ``env``, ``timeout``,
``xargs``, ``find -exec``, ``bash -c``) is looked through: the inner command is a
simple command of its own, classified on its own; the wrapper itself is read-only.
Commands are read by meaning (``options.py``): global options are skipped
(``kubectl -n ns delete`` is destructive) and options are read in any spelling.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from .options import WILD, Invocation, invocation

READ_ONLY = "read-only"
LOCAL = "local-mutation"
OUTSIDE = "outside-workspace"
REMOTE = "remote-mutation"
DESTRUCTIVE = "destructive"
PROTECTED = "protected"
CLASSES = (READ_ONLY, LOCAL, OUTSIDE, REMOTE, DESTRUCTIVE, PROTECTED)
SEVERITY = {name: i for i, name in enumerate(CLASSES)}
# A policy whose `classes` does not name a new class gets these (others unnamed are denied).
CLASS_DEFAULTS = {OUTSIDE: "ask", PROTECTED: "deny"}

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


def _rm(inv: Invocation):
    return DESTRUCTIVE if inv.options & {"-r", "-f"} else LOCAL


def _sed(inv: Invocation):
    return LOCAL if "-i" in inv.options else READ_ONLY


def _find(inv: Invocation):
    if "-delete" in inv.options:
        return DESTRUCTIVE
    if inv.options & {"-fprint", "-fprint0", "-fprintf", "-fls"}:
        return LOCAL
    return READ_ONLY  # -exec: the inner command is classified on its own


def _sort(inv: Invocation):
    return LOCAL if "-o" in inv.options else READ_ONLY


_GIT_READ = frozenset({"status", "log", "diff", "show", "blame", "rev-parse", "describe", "ls-files",
                       "ls-tree", "ls-remote", "cat-file", "grep", "shortlog", "reflog", "rev-list",
                       "whatchanged", "help", "version", "show-ref", "name-rev",
                       "merge-base", "check-ignore", "count-objects", "var", "for-each-ref"})
_GIT_LOCAL = frozenset({"add", "commit", "switch", "merge", "rebase", "cherry-pick", "revert", "init",
                        "clone", "fetch", "pull", "mv", "rm", "apply", "am", "gc", "prune", "worktree",
                        "submodule", "notes", "bisect", "format-patch", "restore-staged", "sparse-checkout"})


def _git(inv: Invocation):
    sub = inv.subcommand
    if sub is None:
        return READ_ONLY  # `git --version`, `git -C x` alone
    rest = inv.operands
    opts = inv.options
    if sub == "push":
        if opts & {"-f", "-d", "--force-with-lease", "--force-if-includes", "--mirror", "--prune"} \
                or any(r.startswith((":", "+")) for r in rest):
            return DESTRUCTIVE
        return REMOTE
    if sub == "reset":
        return DESTRUCTIVE if opts & {"--hard", "--merge", "--keep"} else LOCAL
    if sub == "clean":
        return READ_ONLY if "-n" in opts else DESTRUCTIVE
    if sub == "restore":
        staged_only = "-S" in opts and "-W" not in opts
        return LOCAL if staged_only else DESTRUCTIVE
    if sub == "checkout":
        if inv.end_of_options or "." in rest or "-f" in opts or len(rest) > 1:
            return DESTRUCTIVE
        return LOCAL
    if sub == "stash":
        if rest[:1] and rest[0] in ("list", "show"):
            return READ_ONLY
        return DESTRUCTIVE if rest[:1] and rest[0] in ("drop", "clear") else LOCAL
    if sub == "branch":
        if "-D" in opts or ("-d" in opts and "-f" in opts) or "-M" in opts and "-f" in opts:
            return DESTRUCTIVE
        if opts & {"-d", "-m", "-M", "-c", "-C", "-u", "--unset-upstream", "--edit-description"}:
            return LOCAL
        return LOCAL if rest and not opts & {"-l", "--contains", "--merged", "--no-merged"} else READ_ONLY
    if sub in ("tag", "remote", "config"):
        if sub == "remote" and (not rest or rest[0] in ("show", "get-url", "-v")):
            return READ_ONLY
        if sub == "config" and (opts & {"--get", "--get-all", "--get-regexp", "-l", "--get-urlmatch"}
                                or len(rest) <= 1 and not opts & {"--unset", "--unset-all", "-e"}):
            return READ_ONLY
        if sub == "tag" and not rest and not opts & {"-d", "-a", "-s", "-f"}:
            return READ_ONLY
        return LOCAL
    if sub in ("filter-branch", "filter-repo") or sub == "update-ref" and "-d" in opts:
        return DESTRUCTIVE
    if sub in _GIT_READ:
        return READ_ONLY
    if sub in _GIT_LOCAL or sub == "update-ref":
        return LOCAL
    return None


_GH_WRITE_VERBS = frozenset({"create", "merge", "close", "reopen", "comment", "edit", "review", "ready",
                             "upload", "transfer", "pin", "unpin", "lock", "unlock", "set", "fork",
                             "rerun", "cancel", "run", "enable", "disable", "add", "archive", "rename",
                             "sync", "login", "logout", "refresh", "setup-git", "token"})
_GH_DESTROY_VERBS = frozenset({"delete"})


def _gh(inv: Invocation):
    args = [w for w in inv.positionals]
    if not args:
        return READ_ONLY
    if args[0] == "api":
        method = None
        for option in ("-X", "--method"):
            if inv.values.get(option):
                method = inv.values[option][-1].upper()
        if method == "DELETE":
            return DESTRUCTIVE
        if method in ("POST", "PUT", "PATCH") or inv.options & {"-f", "-F", "--field", "--raw-field", "--input"}:
            return REMOTE
        return READ_ONLY
    verb = args[1] if len(args) > 1 else ""
    if verb in _GH_DESTROY_VERBS:
        return DESTRUCTIVE
    if verb in _GH_WRITE_VERBS:
        return REMOTE
    return READ_ONLY


_CURL_BODY = frozenset({"-d", "--data-binary", "--data-raw", "--data-ascii", "--data-urlencode", "--json", "-F",
                        "--form-string", "-T", "--mail-rcpt", "--mail-from"})


# The schemes curl fetches as a web request does; `file://` reads a local file (a read of
# that path, see operands.py); any other (`gopher://`, `dict://`, `telnet://`, `ldap://`,
# `smb://`, `mqtt://`, `scp://`…) sends what the URL says to the service it names — to a
# database or Redis on 127.0.0.1 as well: remote-mutation.
_CURL_FETCH = frozenset({"http", "https", "ftp", "ftps", "file"})
# curl's protocols, read before a `:` (curl takes `file:/etc/passwd` without the slashes; a
# host such as `localhost:8000` is no protocol: http)
_CURL_PROTOCOLS = frozenset({"dict", "file", "ftp", "ftps", "gopher", "gophers", "http", "https", "imap", "imaps",
                             "ldap", "ldaps", "mqtt", "pop3", "pop3s", "rtmp", "rtmpe", "rtmps", "rtmpt", "rtmpte",
                             "rtmpts", "rtsp", "scp", "sftp", "smb", "smbs", "smtp", "smtps", "telnet", "tftp", "ws",
                             "wss"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def curl_urls(inv: Invocation) -> list[tuple[str, str]]:
    """(scheme, URL) of each URL a curl command fetches (`--proto-default`'s scheme, else
    http, for one written without)."""
    default = (inv.value("--proto-default") or "http").lower()
    out = []
    for url in list(inv.operands) + list(inv.values.get("--url", ())):
        found = _SCHEME.match(url)
        scheme = found.group(1).lower() if found else ""
        if scheme not in _CURL_PROTOCOLS:
            scheme = "other" if "://" in url else default  # `x://…` of a protocol curl lacks: refused by curl
        out.append((scheme, url))
    return out


def _curl(inv: Invocation):
    if any(scheme not in _CURL_FETCH for scheme, _ in curl_urls(inv)):
        return REMOTE
    method = inv.value("-X")
    body = bool(inv.options & _CURL_BODY) or any(o.startswith(("--data", "--form")) for o in inv.options)
    if body or (method is not None and method.upper() not in ("GET", "HEAD", "OPTIONS")):
        return REMOTE
    if inv.options & {"-o", "-O", "-J", "--output-dir", "--remote-name-all"}:
        return LOCAL
    return READ_ONLY


def _wget(inv: Invocation):
    if inv.options & {"--post-data", "--post-file", "--body-data", "--body-file"}:
        return REMOTE
    method = inv.value("--method")
    if method is not None and method.upper() not in ("GET", "HEAD", "OPTIONS"):
        return REMOTE
    if any(v.replace(" ", "").lower().startswith(("post", "method", "body")) for v in inv.values.get("-e", ())):
        return REMOTE
    return READ_ONLY if "--spider" in inv.options else LOCAL


_HTTP_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"})


def _httpie(inv: Invocation):
    ops = list(inv.positionals)
    method = ops[0].upper() if ops and ops[0].upper() in _HTTP_METHODS and ops[0].isalpha() else None
    items = ops[2:] if method else ops[1:]
    data = any(("=" in i and "==" not in i) or ":=" in i or "@" in i for i in items)
    if "--offline" in inv.options:
        return READ_ONLY
    if method not in (None, "GET", "HEAD", "OPTIONS") or data:
        return REMOTE
    return READ_ONLY


# Package-manager commands that run the project's own code, which the agent can write: npm
# runs package.json's lifecycle scripts (`preinstall`, `install`, `postinstall`, `prepare`,
# `prepack`, and `dependencies` after any change to node_modules), compiles a root
# `binding.gyp`, and, even with `--ignore-scripts`, runs the program the project's `.npmrc`
# names as `git` for a git dependency; pnpm also loads `.pnpmfile.cjs`; yarn runs the
# program its settings name (`yarnPath`) for every command; pip and uv build a local
# project (its setup.py or in-tree build backend). Such a command has no class, like
# `npm run`: the policy's rules or its default decide.
_NPM_SCRIPTED = frozenset({"install", "ci", "uninstall", "update", "dedupe", "ddp", "prune", "rebuild", "rb", "link",
                           "pack", "install-test", "it", "install-ci-test", "cit", "find-dupes"})
_PNPM_SCRIPTED = frozenset({"install", "i", "add", "remove", "rm", "uninstall", "un", "update", "up", "upgrade",
                            "prune", "rebuild", "rb", "link", "ln", "unlink", "pack", "dedupe", "import", "fetch",
                            "install-test", "it", "patch-commit", "deploy"})
_BUN_SCRIPTED = frozenset({"install", "i", "add", "a", "remove", "rm", "update", "link", "unlink", "pm", "patch"})


def _bun_scripts_off(inv: Invocation) -> bool:
    """`bun install --ignore-scripts`, not switched back on (`--ignore-scripts=false`, `… false`)."""
    written = [w for w in inv.option_words if w.startswith("--ignore-scripts")]
    return bool(written) and all(w in ("--ignore-scripts", "--ignore-scripts=true") for w in written) \
        and "false" not in inv.positionals


def _package_manager(inv: Invocation):
    program = inv.program
    sub = inv.subcommand or (inv.positionals[0] if inv.positionals else "")
    rest = inv.operands if inv.subcommand else inv.positionals[1:]
    if sub in ("publish", "deprecate", "dist-tag", "owner", "access", "adduser", "login", "logout", "team", "star",
               "unstar", "hook", "token", "org"):
        return REMOTE
    if sub == "unpublish":
        return DESTRUCTIVE
    if program == "yarn":
        return None  # every yarn command first runs the program its settings name (`yarnPath`)
    if sub in ("ls", "list", "view", "info", "show", "outdated", "why", "explain", "search", "help",
               "--version", "-v", "whoami", "doctor", "root", "prefix", "bin", "config", "get"):
        if sub == "config" and rest and rest[0] not in ("get", "list", "ls"):
            # `npm config set init-module ./x.js --location=project` writes a settings file
            # that names programs npm runs (init-module, script-shell, git): no class
            return None
        return READ_ONLY
    if sub == "audit":
        return None if "fix" in rest or "--fix" in inv.option_words else READ_ONLY
    if sub in ("init", "create"):
        # `npm init NAME` runs the registry's `create-NAME` (as `npx` would); `-w DIR`
        # installs; and a bare `npm init` runs the `init-module` its settings name, which a
        # project `.npmrc` (the repository's, or one the agent wrote) can set to its own code
        if program in ("npm", "bun"):
            return None  # (`bun init` also runs `bun install` in the directory)
        return None if rest or sub == "create" or inv.values.get("-w") or "--workspaces" in inv.options else LOCAL
    scripted = {"npm": _NPM_SCRIPTED, "pnpm": _PNPM_SCRIPTED, "bun": _BUN_SCRIPTED}.get(program, frozenset())
    if sub in scripted:
        return LOCAL if program == "bun" and sub != "pm" and _bun_scripts_off(inv) else None
    return None  # run, test, exec, start, npx...: runs project code


_PIP_ARCHIVE = re.compile(r"\.(?:zip|tar|tgz|tbz|txz|tlz|tar\.(?:gz|bz2|xz|lz|lzma))$", re.IGNORECASE)
_PIP_LOCAL_OPTIONS = frozenset({"-e", "--editable", "-r", "--requirement", "-c", "--constraint", "--constraints",
                                "--override", "--overrides", "-b", "--build-constraint", "--build-constraints",
                                "--with-requirements"})


def _local_requirement(word: str) -> bool:
    """Whether pip (or uv) takes this requirement from the disk: a directory or an archive it
    builds (`.`, `./pkg`, `src/pkg`, `x.tar.gz`, `file:…`), not a name from an index."""
    if "file:" in word.lower():
        return True
    if "://" in word:
        return False  # a URL: fetched like a package from an index
    return word.startswith((".", "/", "~")) or "/" in word or bool(_PIP_ARCHIVE.search(word))


def _pip_builds_local(inv: Invocation, words: tuple[str, ...]) -> bool:
    """Whether `pip install|download|wheel` (or `uv pip install`) builds a project from the
    disk: an operand naming one, `-e`, a requirements or constraints file (which can name
    one), or a local index or find-links directory."""
    if inv.options & _PIP_LOCAL_OPTIONS or any(w.split("=", 1)[0] in _PIP_LOCAL_OPTIONS for w in inv.option_words):
        return True
    for option in ("-f", "--find-links", "-i", "--index-url", "--extra-index-url", "--index", "--default-index"):
        if any(not v.lower().startswith(("https://", "http://")) for v in inv.values.get(option, ())):
            return True
    return any(_local_requirement(w) for w in words)


def _pip(inv: Invocation):
    sub = inv.subcommand or ""
    if sub in ("list", "show", "freeze", "check", "help", "search", "index", "inspect"):
        return READ_ONLY
    if sub in ("install", "download", "wheel"):
        return None if _pip_builds_local(inv, inv.operands) else LOCAL
    if sub in ("uninstall", "cache"):
        return LOCAL
    if not sub and "--version" in inv.options:
        return READ_ONLY
    return None


def _uv(inv: Invocation):
    ops = inv.positionals
    sub = ops[0] if ops else ""
    if sub == "publish":
        return REMOTE
    if sub == "pip":
        action = ops[1] if len(ops) > 1 else ""
        if action in ("list", "show", "freeze", "check", "tree", "uninstall"):
            return LOCAL
        # `uv pip install|sync|compile` read the workspace's `uv.toml` or `[tool.uv]`, whose
        # index or find-links can be a directory of the agent's sdists, built on install
        return None
    if sub in ("sync", "add", "remove", "lock"):
        return None  # they build the workspace's own project (its build backend or setup.py)
    if not sub and inv.options & {"-V", "--version", "-h", "--help"}:
        return READ_ONLY
    return None


def _sub(table: Mapping[str, str], default=None) -> Callable:
    def classify_sub(inv: Invocation):
        sub = inv.subcommand if inv.has_subcommands else (inv.positionals[0] if inv.positionals else "")
        if sub is None and inv.options & {"-v", "--version", "-h", "--help"}:
            return READ_ONLY
        return table.get(sub or "", default)
    return classify_sub


def _tar(inv: Invocation):
    # `tar cf host:x src`: an archive name with a colon before any slash is on another
    # machine, reached by `rsh`/`ssh` (unless `--force-local`): the files go there
    if "--force-local" not in inv.options and any(
            ":" in name and "/" not in name.split(":", 1)[0] for name in inv.values.get("-f", ())):
        return REMOTE
    return READ_ONLY if inv.options & {"-t"} and not inv.options & {"-x", "-c", "-r", "-u"} else LOCAL


def _docker(inv: Invocation):
    table = _DOCKER
    sub = inv.subcommand or ""
    ops = inv.operands
    if sub in ("container", "image", "volume", "network", "system", "builder", "buildx") and ops:
        action = ops[0]
        if action in ("rm", "remove", "rmi", "prune", "kill"):
            return DESTRUCTIVE if action != "kill" else LOCAL
        if action in ("ls", "list", "inspect", "logs", "history", "df", "info"):
            return READ_ONLY
        if action == "push":
            return REMOTE
        return None
    return table.get(sub)


_DOCKER = {"ps": READ_ONLY, "images": READ_ONLY, "logs": READ_ONLY, "inspect": READ_ONLY, "version": READ_ONLY,
           "info": READ_ONLY, "pull": LOCAL, "tag": LOCAL, "push": REMOTE, "login": REMOTE,
           "rm": DESTRUCTIVE, "rmi": DESTRUCTIVE, "kill": LOCAL, "stop": LOCAL}

_CONSTANT: dict[str, str | None] = {}
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
              "sort", "sed", "find", "ionice", "exec", "busybox", "toybox", "doas", "sudo", "su", "runuser",
              "flock", "parallel", "chroot", "setsid", "taskset", "chrt", "unbuffer", "caffeinate", "eval",
              "trap", "coproc", "script", "dig", "nslookup", "host", "ping", "whois", "traceroute", "base64",
              "awk", "gawk", "mawk", "nawk", "bat", "batcat", "let"):
    _CONSTANT[_name] = READ_ONLY
for _name in ("touch", "mkdir", "cp", "mv", "ln", "chmod", "chown", "chgrp", "tee", "patch", "unzip",
              "zip", "gzip", "gunzip", "bzip2", "xz", "unxz", "rmdir", "install", "mktemp", "git-lfs",
              "sqlite3", "duckdb"):  # (a SQL shell's programs and other files: risks._sql_shell)
    _CONSTANT[_name] = LOCAL
for _name in ("scp", "rsync", "twine", "sftp", "ftp", "lftp", "ssh", "nc", "ncat", "netcat", "socat", "telnet"):
    _CONSTANT[_name] = REMOTE
for _name in ("dd", "mkfs", "shred", "wipefs", "fdisk", "sfdisk", "parted", "truncate", "pkill",
              "killall", "shutdown", "reboot", "halt", "poweroff", "mkswap", "srm"):
    _CONSTANT[_name] = DESTRUCTIVE
for _name in ("export", "unset", "declare", "local", "readonly", "typeset"):
    _CONSTANT[_name] = READ_ONLY  # shell state only
_CONSTANT["source"] = None  # runs a script we cannot see
_CONSTANT["."] = None

def _kill(inv: Invocation):
    """`kill %1` signals a job of the agent's own shell (local); a process id (`kill 4242`,
    `kill -9 -1`, `kill $PID`, `xargs kill`) can be any process of the user the agent runs
    as — Gatehouse's own server and workers among them: no class. `kill -l` only lists."""
    targets = list(inv.positionals)
    words = list(inv.option_words)
    if words and words[0] in ("-s", "-n", "--signal"):
        targets = targets[1:]  # the signal's name or number
        words = words[1:]
    elif words:
        words = words[1:]  # `-9`, `-TERM`, `-SIGKILL`: the signal
    targets += words  # after the signal, a negative number is a process group (`kill -9 -1`)
    if inv.options & {"-l", "-L", "--list", "--table"} and not [t for t in targets if not t.isdigit()]:
        return READ_ONLY
    if targets and all(t != WILD and t.startswith("%") for t in targets):
        return LOCAL
    return None


def _sets_system(inv: Invocation):
    """`date -s`/`date MMDDhhmm`, `hostname NAME`/`-F FILE`/`-b`: they set the system's
    clock or name (no class); without, they only print."""
    if inv.program == "date":
        sets = "-s" in inv.options or any(not op.startswith("+") for op in inv.operands)
    else:
        sets = bool(inv.operands) or bool(inv.options & {"-F", "-b"})
    return None if sets else READ_ONLY


_BY_NAME: dict[str, Callable] = {
    "date": _sets_system, "hostname": _sets_system, "kill": _kill,
    "rm": _rm, "sed": _sed, "find": _find, "sort": _sort, "git": _git, "gh": _gh, "curl": _curl,
    "wget": _wget, "http": _httpie, "npm": _package_manager, "yarn": _package_manager, "pnpm": _package_manager,
    "bun": _package_manager, "pip": _pip, "uv": _uv, "tar": _tar,
    # (`cargo fetch|tree|metadata|add|remove` run the `rustc` or `rustc-wrapper` the
    # workspace's `.cargo/config.toml` names — tried with cargo 1.95: `add` and `remove`
    # lock the dependencies for the compiler's version: they have no class)
    "cargo": _sub({"publish": REMOTE, "yank": REMOTE, "search": READ_ONLY, "--version": READ_ONLY}),
    "docker": _docker, "podman": _docker,
    "kubectl": _sub({"get": READ_ONLY, "describe": READ_ONLY, "logs": READ_ONLY, "explain": READ_ONLY,
                     "version": READ_ONLY, "top": READ_ONLY, "diff": READ_ONLY, "apply": REMOTE,
                     "create": REMOTE, "patch": REMOTE, "scale": REMOTE, "rollout": REMOTE,
                     "edit": REMOTE, "label": REMOTE, "annotate": REMOTE, "set": REMOTE,
                     "exec": REMOTE, "replace": REMOTE, "run": REMOTE, "expose": REMOTE, "cp": REMOTE,
                     "cordon": REMOTE, "uncordon": REMOTE, "taint": REMOTE, "autoscale": REMOTE,
                     "delete": DESTRUCTIVE, "drain": DESTRUCTIVE}),
    # (`terraform plan|validate|show` start the provider programs under the workspace's
    # `.terraform`, and `plan` runs a configuration's `external` data sources: no class)
    "terraform": _sub({"fmt": LOCAL, "init": LOCAL, "apply": REMOTE, "import": REMOTE, "destroy": DESTRUCTIVE}),
}


# Programs the catalogue knows (a link to one of them is read as that program).
KNOWN_PROGRAMS = frozenset(_CONSTANT) | frozenset(_BY_NAME) | frozenset(
    {"mkfs", "python", "node", "perl", "ruby", "php", "git", "curl", "wget"})


def classify_invocation(inv: Invocation) -> str | None:
    """The side-effect class of one command read by meaning."""
    name = inv.program
    fn = _BY_NAME.get(name)
    if fn is not None:
        return fn(inv)
    if name.startswith("mkfs."):
        return DESTRUCTIVE
    return _CONSTANT.get(name)


def classify_words(words: tuple[str, ...] | list[str]) -> str | None:
    """The side-effect class of one simple command (already unquoted, path dropped)."""
    if not words:
        return None
    return classify_invocation(invocation(tuple(words)))


def classify_tool(tool: str) -> str | None:
    """The class of a non-shell tool (None for unknown tools such as MCP tools)."""
    if tool in EDIT_TOOLS:
        return LOCAL
    if tool in READ_TOOLS or tool in BOOKKEEPING_TOOLS:
        return READ_ONLY
    return None
