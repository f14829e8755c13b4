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
(``kubectl -n ns delete`` is destructive) and options are read in any spelling. What each
program's commands are is its model's class facet (``programs/``).
"""

from __future__ import annotations

from collections.abc import Iterable

from .classnames import CLASS_SEVERITY, CLASSES, DESTRUCTIVE, LOCAL, OUTSIDE, PROTECTED, READ_ONLY, REMOTE
from .options import Invocation, invocation
from .programs.model import Model
from .programs.registry import MODELS, known, model_of
from .verdicts import ASK, DENY

__all__ = ["CLASSES", "DESTRUCTIVE", "LOCAL", "OUTSIDE", "PROTECTED", "READ_ONLY", "REMOTE", "CLASS_SEVERITY",
           "classify_invocation", "classify_tool", "classify_words", "known_program", "most_severe"]

# A policy whose `classes` does not name a new class gets these (others unnamed are denied).
CLASS_DEFAULTS = {OUTSIDE: ASK, PROTECTED: DENY}

EDIT_TOOLS = frozenset({"write", "edit", "MultiEdit", "NotebookEdit"})
READ_TOOLS = frozenset({"read", "Read", "Glob", "Grep", "LS", "webSearch", "WebSearch", "WebFetch", "webFetch"})
BOOKKEEPING_TOOLS = frozenset(
    {"TodoWrite", "TodoRead", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TaskOutput",
     "update_plan", "todo_write", "todowrite", "todoread",
     # Claude Code's entering plan mode changes nothing (leaving it is a plan review)
     "EnterPlanMode"}
)


def is_bookkeeping(tool: str) -> bool:
    return tool in BOOKKEEPING_TOOLS


def most_severe(classes: Iterable[str | None]) -> str | None:
    best = None
    for cls in classes:
        if cls is not None and (best is None or CLASS_SEVERITY[cls] > CLASS_SEVERITY[best]):
            best = cls
    return best


def known_program(name: str) -> bool:
    """Whether the policy knows what the program of this exact name does (a link to it is
    read as that program)."""
    return known(name)


# Programs whose model declares a class (or none on purpose).
KNOWN_PROGRAMS = frozenset(name for name, model in MODELS.items() if model.known)


def classify_invocation(inv: Invocation, model: Model | None = None) -> str | None:
    """The side-effect class of one command read by meaning: its model's class facet
    (`model`: a rule policy's own model of the program)."""
    if model is not None:
        return model.classify(inv)
    model = MODELS.get(inv.program)
    if model is None:
        model = model_of(inv.program)
        if model is None:
            return None
    return model.classify(inv)


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
