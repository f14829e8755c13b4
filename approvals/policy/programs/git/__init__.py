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

from typing import Any

from ...classnames import LOCAL
from ..kit import Examples, with_examples
from ..model import Model
from ..spec import ANY_SUB, Spec, spec
from .classify import classify_git
from .hooks import repository_code
from .operands import git_file_uses, may_name_files_git
from .settings import git_code, may_run_code
from .verify import git_verify

FAMILY = "git"

_DIFF = ("p/patch u s/no-patch /stat? /output: /name-only /name-status /cached /staged M/find-renames? "
         "C/find-copies? O: /word-diff? /color? /no-color /ext-diff /no-ext-diff /textconv /no-textconv /relative? "
         "/no-relative /abbrev? /no-abbrev U/unified: /dirstat? /dirstat-by-file? /cumulative /shortstat /numstat "
         "/summary b/ignore-space-change w/ignore-all-space /ignore-space-at-eol /ignore-cr-at-eol "
         "/ignore-blank-lines I/ignore-matching-lines: /exit-code /quiet /src-prefix: /dst-prefix: /no-prefix "
         "/default-prefix /line-prefix: /diff-filter: X /submodule? /ignore-submodules? R /full-index /binary "
         "/check W/function-context /patch-with-stat /patch-with-raw /raw /minimal /patience /histogram "
         "/anchored: /diff-algorithm: /color-moved? /color-moved-ws: /no-color-moved /no-color-moved-ws "
         "a/text /no-renames /rename-empty /no-rename-empty /find-copies-harder D/irreversible-delete "
         "B/break-rewrites? l: /color-words? /word-diff-regex: /inter-hunk-context: /indent-heuristic "
         "/no-indent-heuristic /ws-error-highlight: /output-indicator-new: /output-indicator-old: "
         "/output-indicator-context: /ita-invisible-in-index /ita-visible-in-index /compact-summary "
         "/stat-width: /stat-name-width: /stat-count: /stat-graph-width: /find-object: /pickaxe-all "
         "/pickaxe-regex /skip-to: /rotate-to: G: S: z /full-diff /merge-base /no-index /cc c /combined-all-paths "
         "/dd /remerge-diff /diff-merges: /no-diff-merges m /exit-code /ignore-all-space /follow")
_REVS = ("n/max-count: /since: /until: /after: /before: /author: /committer: /grep: /grep-reflog: /oneline "
         "/format: /pretty? /abbrev-commit /no-abbrev-commit /graph /all /decorate? /no-decorate "
         "/decorate-refs: /decorate-refs-exclude: /clear-decorations /source /use-mailmap /mailmap /no-mailmap "
         "/log-size /branches? /tags? /remotes? /glob: /exclude: /author-date-order /date-order /topo-order "
         "/simplify-by-decoration /simplify-merges /full-history /dense /sparse /show-pulls /ancestry-path? "
         "/boundary /notes? /no-notes /show-notes? /standard-notes /no-standard-notes /expand-tabs? "
         "/no-expand-tabs /encoding: /invert-grep /all-match i/regexp-ignore-case E/extended-regexp "
         "F/fixed-strings P/perl-regexp /basic-regexp /no-walk? /do-walk /count /parents /children "
         "/max-parents: /min-parents: /no-max-parents /no-min-parents /in-commit-order /relative-date /date: "
         "/left-right /cherry-pick /cherry-mark /cherry /left-only /right-only /show-signature /reverse /merges "
         "/no-merges /first-parent /exclude-first-parent-only /skip: /single-worktree /ignore-missing /bisect "
         "/reflog /walk-reflogs g /not /stdin /show-linear-break? /min-age: /max-age: /objects /objects-edge "
         "/no-object-names /header /timestamp /quiet /disk-usage? /missing: /unpacked L:")
_GIT_LOG = _DIFF + " " + _REVS
_STAT = "/progress /no-progress /recurse-submodules? /no-recurse-submodules q/quiet v/verbose"
_PICK = ("e/edit /no-edit n/no-commit x m/mainline: s/signoff /no-signoff /abort /continue /skip /quit /ff "
         "/allow-empty /allow-empty-message /keep-redundant-commits /empty: /strategy: X/strategy-option: "
         "/rerere-autoupdate /no-rerere-autoupdate S/gpg-sign? /no-gpg-sign /cleanup: /reference")


def _git(table: str, **kwargs: Any) -> Spec:
    # parse-options: a boolean option's `--no-` form is an option too
    return spec(table, negatable=True, **kwargs)


GIT_SUBS: dict[str, Spec] = {
    "push": _git("f/force /force-with-lease? /force-if-includes d/delete n/dry-run u/set-upstream /tags /all "
                 "/branches=all /mirror /prune /follow-tags /atomic /no-verify /verify q/quiet v/verbose "
                 "o/push-option: /repo: /receive-pack: /exec=receive-pack /signed? /porcelain 4/ipv4 6/ipv6 "
                 "/recurse-submodules: /thin /no-thin /progress"),
    "reset": _git("q/quiet /soft /mixed /hard /merge /keep N/intent-to-add p/patch /pathspec-from-file: "
                  "/pathspec-file-nul /recurse-submodules? /no-refresh /refresh"),
    "clean": _git("d f/force i/interactive n/dry-run q/quiet e/exclude: x X"),
    "checkout": _git("b: B: l /orphan: f/force m/merge q/quiet p/patch /detach t/track? /no-track /ours /theirs "
                     "/conflict: /pathspec-from-file: /pathspec-file-nul /overlay /no-overlay /guess /no-guess "
                     "/ignore-skip-worktree-bits /ignore-other-worktrees " + _STAT),
    "switch": _git("c/create: C/force-create: d/detach f/force /discard-changes /orphan: t/track? /no-track "
                   "m/merge /conflict: /guess /no-guess /ignore-other-worktrees " + _STAT),
    "restore": _git("s/source: S/staged W/worktree p/patch /ours /theirs m/merge /conflict: /ignore-unmerged "
                    "/overlay /no-overlay /pathspec-from-file: /pathspec-file-nul /ignore-skip-worktree-bits " + _STAT),
    "branch": _git("d/delete D f/force m/move M c/copy C l/list a/all r/remotes v/verbose u/set-upstream-to: "
                   "/unset-upstream t/track? /no-track /contains? /no-contains? /merged? /no-merged? /sort: "
                   "/format: /points-at: /show-current q/quiet /color? /no-color /column? /no-column "
                   "/edit-description /create-reflog i/ignore-case /abbrev? /no-abbrev /omit-empty "
                   "/recurse-submodules"),
    "commit": _git("a/all m/message: F/file: C/reuse-message: c/reedit-message: /fixup: /squash: /amend "
                   "n/no-verify /verify e/edit /no-edit s/signoff S/gpg-sign? q/quiet v/verbose /allow-empty "
                   "/allow-empty-message /author: /date: t/template: p/patch i/include o/only "
                   "u/untracked-files? /cleanup: /dry-run z/null /pathspec-from-file: /pathspec-file-nul "
                   "/trailer: /status /reset-author /no-post-rewrite /porcelain /short /branch /long "
                   "/ahead-behind /interactive /no-gpg-sign /no-signoff"),
    "add": _git("A/all u/update p/patch f/force n/dry-run N/intent-to-add i/interactive e/edit /chmod: "
                "/pathspec-from-file: /pathspec-file-nul v/verbose /ignore-errors /renormalize /ignore-missing "
                "/sparse /ignore-removal /refresh /no-warn-embedded-repo"),
    "rm": _git("f/force r n/dry-run q/quiet /cached /ignore-unmatch /pathspec-from-file: /pathspec-file-nul "
               "/sparse"),
    "mv": _git("f/force k n/dry-run v/verbose /sparse"),
    "rebase": _git("i/interactive x/exec: /onto: /root /abort /continue /skip /autosquash /autostash "
                   "s/strategy: X/strategy-option: r/rebase-merges? /keep-base /edit-todo q/quiet v/verbose "
                   "/update-refs /reapply-cherry-picks /fork-point /committer-date-is-author-date /ignore-date "
                   "/reset-author-date /ignore-whitespace /whitespace: /signoff /verify /empty: /keep-empty "
                   "/reschedule-failed-exec /apply m/merge /stat n/no-stat /quit /show-current-patch "
                   "S/gpg-sign? /rerere-autoupdate f/force-rebase /no-ff=force-rebase C:"),
    "config": _git("/global /system /local /worktree f/file: /blob: /get /get-all /get-regexp /get-urlmatch "
                   "/replace-all /add /unset /unset-all /rename-section /remove-section l/list /type: /bool "
                   "/int /path e/edit z/null /name-only /show-origin /show-scope /default: /includes "
                   "/get-color /get-colorbool /fixed-value /comment: /bool-or-int /bool-or-str /expiry-date "
                   "/show-names /url: /all /regexp /value:"),
    "clone": _git("o/origin: b/branch: u/upload-pack: /template: c/config: /depth: /reference: /reference-if-able: "
                  "/separate-git-dir: j/jobs: /filter: /recurse-submodules? /mirror /bare l/local "
                  "n/no-checkout s/shared q/quiet v/verbose /single-branch /no-tags /tags /sparse "
                  "/shallow-since: /shallow-exclude: /also-filter-submodules /remote-submodules "
                  "/shallow-submodules /progress /dissociate /no-hardlinks /bundle-uri: /revision: /ref-format: "
                  "/server-option: 4/ipv4 6/ipv6 /reject-shallow"),
    "fetch": _git("/upload-pack: /all p/prune P/prune-tags n /dry-run /depth: /deepen: f/force t/tags j/jobs: "
                  "o/server-option: q/quiet v/verbose /unshallow /multiple a/append /atomic /no-tags "
                  "/refmap: /recurse-submodules? /set-upstream u/update-head-ok k/keep /progress "
                  "/write-fetch-head /negotiation-tip: /negotiate-only /porcelain /shallow-since: "
                  "/shallow-exclude: /update-shallow /show-forced-updates 4/ipv4 6/ipv6 /prefetch /auto-gc "
                  "/auto-maintenance /write-commit-graph /filter: /refetch /stdin"),
    "pull": _git("/upload-pack: r/rebase? /no-rebase /ff /no-ff /ff-only /all p/prune /depth: /deepen: f/force "
                 "t/tags j/jobs: o/server-option: q/quiet v/verbose s/strategy: X/strategy-option: /autostash "
                 "/commit /edit e=edit /stat n/no-stat /log? /signoff /squash /verify /allow-unrelated-histories "
                 "/recurse-submodules? /append a=append k/keep /unshallow /update-shallow /refmap: "
                 "/set-upstream /progress 4/ipv4 6/ipv6 S/gpg-sign? /cleanup: /verify-signatures "
                 "/shallow-since: /shallow-exclude:"),
    "log": _git(_GIT_LOG, numeric=True), "show": _git(_GIT_LOG, numeric=True),
    "diff": _git(_GIT_LOG), "whatchanged": _git(_GIT_LOG, numeric=True),
    "rev-list": _git(_GIT_LOG, numeric=True), "shortlog": _git(_REVS + " n/numbered s/summary e/email c/committer "
                                                                     "/group: w?", numeric=True),
    "reflog": _git(_GIT_LOG, numeric=True),
    "stash": _git(_DIFF + " k/keep-index u/include-untracked a/all q/quiet m/message: S/staged /index "
                  "/only-untracked /pathspec-from-file: /pathspec-file-nul /oneline /format: /pretty? /date: "
                  "p/patch", numeric=True),
    "tag": _git("a/annotate s/sign u/local-user: f/force d/delete v/verify n? l/list m/message: F/file: "
                "/sort: /contains? /no-contains? /points-at: /merged? /no-merged? /column? /no-column "
                "/create-reflog /cleanup: /trailer: e/edit /no-sign /color? i/ignore-case /omit-empty /format:"),
    "grep": _git("e: f: A/after-context: B/before-context: C/context: m/max-count: /max-depth: "
                 "O/open-files-in-pager? i/ignore-case w/word-regexp v/invert-match n/line-number l "
                 "L c/count E/extended-regexp F/fixed-strings P/perl-regexp /cached /untracked /no-index "
                 "/recurse-submodules /exclude-standard /heading /break p/show-function W/function-context "
                 "/column /threads: h H /full-name a/text I /textconv /null z o/only-matching q/quiet "
                 "/all-match /and /or /not /color? G/basic-regexp /files-with-matches=l /name-only=l "
                 "/files-without-match=L /only-matching /regexp=e /file=f", numeric=True),
    "difftool": _git("x/extcmd: t/tool: y/no-prompt g/gui d/dir-diff /tool-help"),
    "mergetool": _git("t/tool: y/no-prompt /tool-help"),
    "archive": _git("o/output: /format: /prefix: /remote: /exec: v/verbose l/list /add-file: /add-virtual-file: "
                    "/worktree-attributes /mtime: 0 1 2 3 4 5 6 7 8 9"),
    "ls-remote": _git("/upload-pack: h/heads t/tags /refs q/quiet /exit-code /get-url /symref /sort: "
                      "o/server-option: b/branches"),
    "merge": _git("m: s/strategy: X/strategy-option: F/file: /no-ff /ff /ff-only /squash /abort /continue "
                  "n/no-stat /stat /edit e=edit /verify /commit /log? /signoff /allow-unrelated-histories /quit "
                  "/into-name: /autostash /verify-signatures /overwrite-ignore q/quiet v/verbose /progress "
                  "/rerere-autoupdate /cleanup: S/gpg-sign?"),
    "cherry-pick": _git(_PICK), "revert": _git(_PICK),
    "submodule": _git("q/quiet /recursive /init /remote /no-fetch N=no-fetch /checkout /merge /rebase "
                      "/recommend-shallow /depth: /jobs: j=jobs /cached /files /summary-limit: n=summary-limit "
                      "/force f=force /all b/branch: /name: /reference: /single-branch"),
    "status": _git("s/short b/branch /porcelain? u/untracked-files? /ignored? z v/verbose /ahead-behind /column? "
                   "/find-renames? /renames /show-stash /long /ignore-submodules? /null=z"),
    "worktree": _git("f/force b: B: /detach /lock /reason: /checkout /guess-remote /track /orphan q/quiet "
                     "v/verbose /porcelain z /expire: /relative-paths"),
    "am": _git("3/3way s/signoff q/quiet /abort /continue /skip /keep-cr /scissors /quoted-cr: /quit "
               "/show-current-patch? r/resolved i/interactive /committer-date-is-author-date /ignore-date "
               "/empty: /patch-format: k/keep /keep-non-patch m/message-id u/utf8 /ignore-space-change "
               "/ignore-whitespace /directory: /exclude: /include: /reject /whitespace: C: p: S/gpg-sign?"),
    "apply": _git("/check /stat /numstat /summary /index /cached R/reverse p: /directory: /unsafe-paths v/verbose "
                  "3/3way /reject /allow-empty /recount /exclude: /include: /whitespace: C: /inaccurate-eof "
                  "N/intent-to-add /build-fake-ancestor: z q/quiet /apply /no-add /allow-binary-replacement "
                  "/binary"),
    "format-patch": _git(_DIFF + " o/output-directory: n/numbered N/no-numbered /stdout /cover-letter "
                                 "v/reroll-count: /start-number: /numbered-files /suffix: k/keep-subject "
                                 "/subject-prefix: /rfc? /to: /cc: /from? /in-reply-to: /thread? /signature: "
                                 "/no-signature /base: /zero-commit /progress /filename-max-length: "
                                 "/cover-from-description: /inline? /attach? /signoff /add-header: "
                                 "/ignore-if-in-upstream /always /interdiff: /range-diff: /creation-factor: q/quiet",
                         numeric=True),
    "blame": _git("L: S: C? M? w e s /porcelain p=porcelain /line-porcelain /incremental l t /root /show-stats "
                  "f/show-name n/show-number c /score-debug /show-email /date: /ignore-rev: /ignore-revs-file: "
                  "/reverse: /first-parent /contents: /encoding: /abbrev? b /progress /color-lines /color-by-age"),
    "send-email": _git("/to: /cc: /from: /smtp-server: /sendmail-cmd:"),
    "bisect": _git("/term-old: /term-new: /term-bad=term-new /term-good=term-old /no-checkout /first-parent"),
    "filter-branch": _git("f/force /env-filter: /tree-filter: /index-filter: /msg-filter: /commit-filter: "
                          "/subdirectory-filter: /tag-name-filter: /parent-filter:"),
    "rev-parse": _git("/abbrev-ref? /show-toplevel /show-prefix /show-cdup /git-dir /git-common-dir "
                      "/absolute-git-dir /is-inside-work-tree /is-inside-git-dir /is-bare-repository "
                      "/is-shallow-repository /show-superproject-working-tree /shared-index-path /verify q/quiet "
                      "/short? /symbolic /symbolic-full-name /all /branches? /tags? /remotes? /glob: /exclude: "
                      "/exclude-hidden: /disambiguate: /local-env-vars /path-format: /git-path: "
                      "/resolve-git-dir: /sq-quote /sq /revs-only /no-revs /flags /no-flags /default: /prefix: "
                      "/since: /after: /until: /before: /show-object-format? /show-ref-format /not "
                      "/end-of-options"),
    "describe": _git("/all /tags /contains /abbrev: /candidates: /exact-match /debug /long /match: /exclude: "
                     "/always /first-parent /dirty? /broken?"),
    "ls-files": _git("c/cached d/deleted m/modified o/others i/ignored s/stage /directory /no-empty-directory "
                     "u/unmerged k/killed z x/exclude: X/exclude-from: /exclude-per-directory: /exclude-standard "
                     "/error-unmatch /with-tree: t v f /full-name /recurse-submodules /abbrev? /debug /eol "
                     "/deduplicate /sparse /format: /resolve-undo"),
    "ls-tree": _git("d r t l/long z /name-only /name-status /object-only /full-name /full-tree /abbrev? /format:"),
    "cat-file": _git("t s e p /batch? /batch-check? /batch-command? /batch-all-objects /buffer /unordered "
                     "/follow-symlinks /textconv /filters /path: /allow-unknown-type /mailmap /use-mailmap Z z "
                     "/filter:"),
    "help": _git("a/all g/guides c/config i/info m/man /verbose /no-external-commands /no-aliases /user-interfaces "
                 "/developer-interfaces"),
    "version": _git("/build-options"),
    "show-ref": _git("/head /tags /heads /branches /verify /exists d/dereference s/hash? /abbrev? q/quiet "
                     "/exclude-existing?"),
    "name-rev": _git("/tags /refs: /exclude: /all /annotate-stdin /name-only /no-undefined /always"),
    "merge-base": _git("a/all /octopus /independent /is-ancestor /fork-point"),
    "check-ignore": _git("q/quiet v/verbose /stdin z n/non-matching /no-index"),
    "count-objects": _git("v/verbose H/human-readable"),
    "var": _git("l"),
    "for-each-ref": _git("/count: /sort: /format: /color? /shell s=shell /perl p=perl /python /tcl /points-at: "
                         "/merged? /no-merged? /contains? /no-contains? /ignore-case /omit-empty /exclude: /stdin "
                         "/include-root-refs"),
    "init": _git("q/quiet /bare /template: /separate-git-dir: /object-format: /ref-format: b/initial-branch: "
                 "/shared?"),
    "gc": _git("/aggressive /auto /quiet q=quiet /prune? /force /keep-largest-pack /cruft /max-cruft-size: "
               "/detach"),
    "prune": _git("n/dry-run v/verbose /progress /expire:"),
    "notes": _git("/ref: m/message: F/file: C/reuse-message: c/reedit-message: /allow-empty f/force /for-rewrite: "
                  "/stdin /ignore-missing n /strategy: s=strategy /commit /abort"),
    "sparse-checkout": _git("/cone /sparse-index /skip-checks /stdin"),
    "update-ref": _git("d m: /no-deref /stdin z /create-reflog"),
    "remote": _git("v/verbose t: m: f /tags /mirror? /push /add /delete /all n/dry-run /prune p"),
}
_GIT = spec(
    "C: c: /git-dir: /work-tree: /namespace: /exec-path? /config-env: /super-prefix: p/paginate P/no-pager "
    "/no-replace-objects /bare /literal-pathspecs /glob-pathspecs /noglob-pathspecs /icase-pathspecs "
    "/no-optional-locks /list-cmds: /attr-source: v/version /html-path /man-path /info-path h/help /no-advice",
    subcommands=GIT_SUBS, default_sub=ANY_SUB,
)

MODELS = [
    Model("git", FAMILY, "version control: reading is read-only, committing local, `push` remote, discarding "
                         "work destructive; every route to a file is a read or write of it; settings and options "
                         "that name a program, and the repository's hooks, are asked about",
          dash_subcommands=tuple(GIT_SUBS), options=_GIT, cls=classify_git, files=git_file_uses,
          names_files=may_name_files_git, code=git_code, may_run_code=may_run_code, workspace_code=repository_code,
          stales_index=True, option_sensitive=True, verify=git_verify,
          effects={"--exec-path": "code", "--config-env": "code"}),
    Model("git-lfs", FAMILY, "git's large-file storage", options=spec("/version /help h"), cls=LOCAL),
]

_EXAMPLES: dict[str, Examples] = {
    "git": {"allow": ("git status", "git log --oneline -20", "git diff --stat HEAD~1", "git commit -m wip",
                      "git pull origin main", "git rev-parse --show-toplevel", "git stash list --oneline"),
            "ask": ("git push origin main", "git pull https://other.example/x main", "git -c core.pager=./x log",
                    "git show HEAD:.env", "git log --no-such-option"),
            "deny": ("git push --force", "git reset --hard", "git clean -fd")},
    "git-lfs": {"allow": ("git-lfs ls-files",)},
}
MODELS = with_examples(MODELS, _EXAMPLES)
