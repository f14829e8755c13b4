"""The side-effect class of a git command: by subcommand, and by the options and operands
that make it more severe (`push --force`, `reset --hard`, `checkout -- PATH`)."""

from __future__ import annotations

from ...classnames import DESTRUCTIVE, LOCAL, READ_ONLY, REMOTE
from ..invocation import Invocation

GIT_READ = frozenset({"status", "log", "diff", "show", "blame", "rev-parse", "describe", "ls-files",
                      "ls-tree", "ls-remote", "cat-file", "grep", "shortlog", "reflog", "rev-list",
                      "whatchanged", "help", "version", "show-ref", "name-rev",
                      "merge-base", "check-ignore", "count-objects", "var", "for-each-ref"})
GIT_LOCAL = frozenset({"add", "commit", "switch", "merge", "rebase", "cherry-pick", "revert", "init",
                       "clone", "fetch", "pull", "mv", "rm", "apply", "am", "gc", "prune", "worktree",
                       "submodule", "notes", "bisect", "format-patch", "restore-staged", "sparse-checkout"})


def classify_git(inv: Invocation) -> str | None:
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
    if sub in GIT_READ:
        return READ_ONLY
    if sub in GIT_LOCAL or sub == "update-ref":
        return LOCAL
    return None
