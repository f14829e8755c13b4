"""git: the model, its option spelling, and where its facets live.

- class (`classify.py`): by subcommand and by what makes it more severe;
- files (`operands.py`): every git route to a file is a read or a write of it (`git show
  HEAD:.env`, `git log -p -- .env`, `git checkout -- PATH`, `git apply`'s patches…), and
  what the repository tracks for a command that prints it (`index.py`);
- code (`settings.py`): settings and options that name a program git runs;
- hooks (`hooks.py`): the repository's hooks a command runs, which can run the workspace's
  files.
"""

from __future__ import annotations

from ...classnames import LOCAL
from ..model import Model
from ..spec import ANY_SUB, Spec, spec
from .classify import classify_git
from .hooks import repository_hooks
from .operands import git_file_uses, may_name_files_git
from .settings import git_code, may_run_code

FAMILY = "git"

_GIT_LOG = ("n/max-count: p/patch u s/no-patch /stat /oneline /format: /pretty: /since: /until: /after: /before: "
            "/author: /committer: /grep: /output: G: S: L: /no-index /name-only /name-status /cached /staged "
            "M/find-renames? C/find-copies? O: /word-diff /color /no-color /ext-diff /no-ext-diff /textconv "
            "/no-textconv /relative /abbrev /graph /all /decorate /follow U/unified: /dirstat /shortstat /numstat "
            "/summary b/ignore-space-change w/ignore-all-space /exit-code /quiet /src-prefix: /dst-prefix: "
            "/no-prefix /diff-filter: X /submodule /reverse /merges /no-merges /first-parent /skip: "
            "/date: /left-right /cherry-pick /show-signature R /full-index /binary /check W/function-context")
GIT_SUBS: dict[str, Spec] = {
    "push": spec("f/force /force-with-lease /force-if-includes d/delete n/dry-run u/set-upstream /tags /all "
                  "/branches=all /mirror /prune /follow-tags /atomic /no-verify /verify q/quiet v/verbose "
                  "o/push-option: /repo: /receive-pack: /exec=receive-pack /signed /porcelain 4/ipv4 6/ipv6 "
                  "/recurse-submodules: /thin /no-thin /progress"),
    "reset": spec("q/quiet /soft /mixed /hard /merge /keep N/intent-to-add p/patch /pathspec-from-file:"),
    "clean": spec("d f/force i/interactive n/dry-run q/quiet e/exclude: x X"),
    "checkout": spec("b: B: l /orphan: f/force m/merge q/quiet p/patch /detach t/track /no-track /ours /theirs "
                      "/conflict: /pathspec-from-file: /overlay /no-overlay"),
    "switch": spec("c/create: C/force-create: d/detach f/force /discard-changes /orphan: t/track /no-track "
                    "m/merge q/quiet /guess /no-guess"),
    "restore": spec("s/source: S/staged W/worktree p/patch q/quiet /ours /theirs m/merge /conflict: "
                     "/ignore-unmerged /overlay /no-overlay /pathspec-from-file:"),
    "branch": spec("d/delete D f/force m/move M c/copy C l/list a/all r/remotes v/verbose u/set-upstream-to: "
                    "/unset-upstream t/track /no-track /contains: /no-contains: /merged: /no-merged: /sort: "
                    "/format: /points-at: /show-current q/quiet /color /no-color /column /edit-description "
                    "/create-reflog i/ignore-case"),
    "commit": spec("a/all m/message: F/file: C/reuse-message: c/reedit-message: /fixup: /squash: /amend "
                    "n/no-verify /verify e/edit /no-edit s/signoff S/gpg-sign? q/quiet v/verbose /allow-empty "
                    "/allow-empty-message /author: /date: t/template: p/patch i/include o/only "
                    "u/untracked-files? /cleanup: /dry-run z/null /pathspec-from-file: /trailer:"),
    "add": spec("A/all u/update p/patch f/force n/dry-run N/intent-to-add i/interactive e/edit /chmod: "
                 "/pathspec-from-file: v/verbose /ignore-errors /renormalize"),
    "rm": spec("f/force r n/dry-run q/quiet /cached /ignore-unmatch /pathspec-from-file:"),
    "mv": spec("f/force k n/dry-run v/verbose"),
    "rebase": spec("i/interactive x/exec: /onto: /root /abort /continue /skip /autosquash /autostash "
                    "s/strategy: X/strategy-option: r/rebase-merges? /keep-base /edit-todo q/quiet v/verbose"),
    "config": spec("/global /system /local /worktree f/file: /blob: /get /get-all /get-regexp /get-urlmatch "
                    "/replace-all /add /unset /unset-all /rename-section /remove-section l/list /type: /bool "
                    "/int /path e/edit z/null /name-only /show-origin /show-scope /default: /includes"),
    "clone": spec("o/origin: b/branch: u/upload-pack: /template: c/config: /depth: /reference: "
                   "/separate-git-dir: j/jobs: /filter: /recurse-submodules? /mirror /bare l/local "
                   "n/no-checkout s/shared q/quiet v/verbose /single-branch /no-tags /sparse"),
    "fetch": spec("/upload-pack: /all p/prune P/prune-tags n /dry-run /depth: f/force t/tags j/jobs: "
                   "o/server-option: q/quiet v/verbose /unshallow /multiple"),
    "pull": spec("/upload-pack: r/rebase? /no-rebase /ff /no-ff /ff-only /all p/prune /depth: f/force "
                  "t/tags j/jobs: o/server-option: q/quiet v/verbose s/strategy: X/strategy-option: /autostash"),
    "log": spec(_GIT_LOG), "show": spec(_GIT_LOG), "diff": spec(_GIT_LOG), "whatchanged": spec(_GIT_LOG),
    "stash": spec("p/patch k/keep-index u/include-untracked a/all q/quiet m/message: S/staged"),
    "tag": spec("a/annotate s/sign u/local-user: f/force d/delete v/verify n? l/list m/message: F/file: "
                 "/sort: /contains: /points-at: /merged: /no-merged:"),
    "grep": spec("e: f: A/after-context: B/before-context: C/context: m/max-count: /max-depth: "
                  "O/open-files-in-pager? i/ignore-case w/word-regexp v/invert-match n/line-number l "
                  "L c/count E/extended-regexp F/fixed-strings P/perl-regexp /cached /untracked"),
    "difftool": spec("x/extcmd: t/tool: y/no-prompt g/gui d/dir-diff /tool-help"),
    "mergetool": spec("t/tool: y/no-prompt /tool-help"),
    "archive": spec("o/output: /format: /prefix: /remote: /exec: v/verbose l/list"),
    "ls-remote": spec("/upload-pack: h/heads t/tags /refs q/quiet /exit-code"),
    "merge": spec("m: s/strategy: X/strategy-option: F/file: /no-ff /ff /ff-only /squash /abort "
                   "/continue n/no-stat /no-edit e/edit /no-verify"),
    "cherry-pick": spec("e/edit n/no-commit x m/mainline: s/signoff /abort /continue /skip /quit"),
    "revert": spec("e/edit n/no-commit m/mainline: s/signoff /abort /continue /skip /quit /no-edit"),
    "submodule": spec("q/quiet /recursive"),
    "status": spec("s/short b/branch /porcelain? u/untracked-files? /ignored? z v/verbose"),
    "worktree": spec("f/force b: B: /detach /lock /reason:"),
    "am": spec("3/3way s/signoff q/quiet /abort /continue /skip"),
    "apply": spec("/check /stat /numstat /summary /index /cached R/reverse p: /directory: /unsafe-paths v/verbose"),
    "format-patch": spec("o/output-directory: n/numbered /stdout /cover-letter v/reroll-count:"),
    "blame": spec("L: S: C? M? w e s"),
    "send-email": spec("/to: /cc: /from: /smtp-server: /sendmail-cmd:"),
    "bisect": spec(""),
    "filter-branch": spec("f/force /env-filter: /tree-filter: /index-filter: /msg-filter: /commit-filter: "
                           "/subdirectory-filter: /tag-name-filter: /parent-filter:"),
}
_GIT = spec(
    "C: c: /git-dir: /work-tree: /namespace: /exec-path? /config-env: /super-prefix: p/paginate P/no-pager "
    "/no-replace-objects /bare /literal-pathspecs /glob-pathspecs /noglob-pathspecs /icase-pathspecs "
    "/no-optional-locks /list-cmds: /attr-source: v/version /html-path /man-path /info-path h/help",
    subcommands=GIT_SUBS, default_sub=ANY_SUB,
)


MODELS = [
    Model("git", FAMILY, "version control: reading is read-only, committing local, `push` remote, discarding "
                         "work destructive; every route to a file is a read or write of it; settings and options "
                         "that name a program, and the repository's hooks, are asked about",
          dash_subcommands=tuple(GIT_SUBS), options=_GIT, cls=classify_git, files=git_file_uses,
          names_files=may_name_files_git, code=git_code, may_run_code=may_run_code, hooks=repository_hooks,
          stales_index=True, option_sensitive=True),
    Model("git-lfs", FAMILY, "git's large-file storage", cls=LOCAL),
]
