"""The option catalogue: how common programs spell their options and subcommands.

Each program (and each subcommand of git, docker, kubectl, npm, pip, gh) has a `Spec`:
its short options, the long names that stand for them, which take a value, its
subcommands and their aliases. Written compactly (`r/recursive R=r f/force C: /git-dir:`,
see `_spec`); read by `options.read_words`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Spec:
    """How one program (or one of its subcommands) spells its options."""

    shorts: Mapping[str, str] = field(default_factory=dict)  # letter -> canonical option
    longs: Mapping[str, str] = field(default_factory=dict)  # long name -> canonical option
    values: frozenset[str] = frozenset()  # canonical options that take a value
    attached: frozenset[str] = frozenset()  # canonical options whose value, if any, is attached (`-i.bak`)
    subcommands: Mapping[str, Spec] | None = None  # None: the program has no subcommands
    default_sub: Spec | None = None  # the spec of a subcommand the catalogue does not list
    sub_aliases: Mapping[str, str] = field(default_factory=dict)  # `i` -> `install`
    single_dash: bool = False  # `-name` is one option (find, go): clusters are not split
    stop_at_operand: bool = False  # options end at the first operand (`python x.py -c` passes -c to x.py)
    known: bool = True

    def long(self, name: str) -> tuple[str, ...]:
        """Canonical options a long name stands for: itself, else every option it abbreviates."""
        hit = self.longs.get(name)
        if hit is not None:
            return (hit,)
        if len(name) >= 2 and self.longs:
            found = tuple(sorted({canon for full, canon in self.longs.items() if full.startswith(name)}))
            if found:
                return found
        return ("--" + name,)


def _spec(table: str, **kwargs) -> Spec:
    """A Spec from a compact table: `r/recursive R=r f/force C: /git-dir: i?`.

    `x` a short option, `x/long` with its long name, `/long` long only, a trailing `:`
    takes a value, `?` takes an optional attached value; `R=r` and `/long=r` are aliases.
    """
    shorts: dict[str, str] = {}
    longs: dict[str, str] = {}
    values: set[str] = set()
    attached: set[str] = set()
    for token in table.split():
        if "=" in token:
            alias, target = token.split("=", 1)
            canon = f"-{target}" if len(target) == 1 else f"--{target.lstrip('/')}"
            if alias.startswith("/"):
                longs[alias[1:]] = canon
            else:
                shorts[alias] = canon
            continue
        takes = token.endswith(":")
        optional = token.endswith("?")
        token = token.rstrip(":?")
        short, _, long = token.partition("/")
        canon = f"-{short}" if short else f"--{long}"
        if short:
            shorts[short] = canon
        for name in long.split("/") if long else ():
            longs[name] = canon
        if takes:
            values.add(canon)
        if optional:
            attached.add(canon)
    return Spec(shorts=shorts, longs=longs, values=frozenset(values), attached=frozenset(attached), **kwargs)


UNKNOWN = Spec(known=False)
_ANY_SUB = Spec(known=False)

_GIT_LOG = ("n/max-count: p/patch u s/no-patch /stat /oneline /format: /pretty: /since: /until: /after: /before: "
            "/author: /committer: /grep: /output: G: S: L: /no-index /name-only /name-status /cached /staged "
            "M/find-renames? C/find-copies? O: /word-diff /color /no-color /ext-diff /no-ext-diff /textconv "
            "/no-textconv /relative /abbrev /graph /all /decorate /follow U/unified: /dirstat /shortstat /numstat "
            "/summary b/ignore-space-change w/ignore-all-space /exit-code /quiet /src-prefix: /dst-prefix: "
            "/no-prefix /diff-filter: X /submodule /reverse /merges /no-merges /first-parent /skip: "
            "/date: /left-right /cherry-pick /show-signature R /full-index /binary /check W/function-context")
_GIT_SUBS: dict[str, Spec] = {
    "push": _spec("f/force /force-with-lease /force-if-includes d/delete n/dry-run u/set-upstream /tags /all "
                  "/branches=all /mirror /prune /follow-tags /atomic /no-verify /verify q/quiet v/verbose "
                  "o/push-option: /repo: /receive-pack: /exec=receive-pack /signed /porcelain 4/ipv4 6/ipv6 "
                  "/recurse-submodules: /thin /no-thin /progress"),
    "reset": _spec("q/quiet /soft /mixed /hard /merge /keep N/intent-to-add p/patch /pathspec-from-file:"),
    "clean": _spec("d f/force i/interactive n/dry-run q/quiet e/exclude: x X"),
    "checkout": _spec("b: B: l /orphan: f/force m/merge q/quiet p/patch /detach t/track /no-track /ours /theirs "
                      "/conflict: /pathspec-from-file: /overlay /no-overlay"),
    "switch": _spec("c/create: C/force-create: d/detach f/force /discard-changes /orphan: t/track /no-track "
                    "m/merge q/quiet /guess /no-guess"),
    "restore": _spec("s/source: S/staged W/worktree p/patch q/quiet /ours /theirs m/merge /conflict: "
                     "/ignore-unmerged /overlay /no-overlay /pathspec-from-file:"),
    "branch": _spec("d/delete D f/force m/move M c/copy C l/list a/all r/remotes v/verbose u/set-upstream-to: "
                    "/unset-upstream t/track /no-track /contains: /no-contains: /merged: /no-merged: /sort: "
                    "/format: /points-at: /show-current q/quiet /color /no-color /column /edit-description "
                    "/create-reflog i/ignore-case"),
    "commit": _spec("a/all m/message: F/file: C/reuse-message: c/reedit-message: /fixup: /squash: /amend "
                    "n/no-verify /verify e/edit /no-edit s/signoff S/gpg-sign? q/quiet v/verbose /allow-empty "
                    "/allow-empty-message /author: /date: t/template: p/patch i/include o/only "
                    "u/untracked-files? /cleanup: /dry-run z/null /pathspec-from-file: /trailer:"),
    "add": _spec("A/all u/update p/patch f/force n/dry-run N/intent-to-add i/interactive e/edit /chmod: "
                 "/pathspec-from-file: v/verbose /ignore-errors /renormalize"),
    "rm": _spec("f/force r n/dry-run q/quiet /cached /ignore-unmatch /pathspec-from-file:"),
    "mv": _spec("f/force k n/dry-run v/verbose"),
    "rebase": _spec("i/interactive x/exec: /onto: /root /abort /continue /skip /autosquash /autostash "
                    "s/strategy: X/strategy-option: r/rebase-merges? /keep-base /edit-todo q/quiet v/verbose"),
    "config": _spec("/global /system /local /worktree f/file: /blob: /get /get-all /get-regexp /get-urlmatch "
                    "/replace-all /add /unset /unset-all /rename-section /remove-section l/list /type: /bool "
                    "/int /path e/edit z/null /name-only /show-origin /show-scope /default: /includes"),
    "clone": _spec("o/origin: b/branch: u/upload-pack: /template: c/config: /depth: /reference: "
                   "/separate-git-dir: j/jobs: /filter: /recurse-submodules? /mirror /bare l/local "
                   "n/no-checkout s/shared q/quiet v/verbose /single-branch /no-tags /sparse"),
    "fetch": _spec("/upload-pack: /all p/prune P/prune-tags n /dry-run /depth: f/force t/tags j/jobs: "
                   "o/server-option: q/quiet v/verbose /unshallow /multiple"),
    "pull": _spec("/upload-pack: r/rebase? /no-rebase /ff /no-ff /ff-only /all p/prune /depth: f/force "
                  "t/tags j/jobs: o/server-option: q/quiet v/verbose s/strategy: X/strategy-option: /autostash"),
    "log": _spec(_GIT_LOG), "show": _spec(_GIT_LOG), "diff": _spec(_GIT_LOG), "whatchanged": _spec(_GIT_LOG),
    "stash": _spec("p/patch k/keep-index u/include-untracked a/all q/quiet m/message: S/staged"),
    "tag": _spec("a/annotate s/sign u/local-user: f/force d/delete v/verify n? l/list m/message: F/file: "
                 "/sort: /contains: /points-at: /merged: /no-merged:"),
    "grep": _spec("e: f: A/after-context: B/before-context: C/context: m/max-count: /max-depth: "
                  "O/open-files-in-pager? i/ignore-case w/word-regexp v/invert-match n/line-number l "
                  "L c/count E/extended-regexp F/fixed-strings P/perl-regexp /cached /untracked"),
    "difftool": _spec("x/extcmd: t/tool: y/no-prompt g/gui d/dir-diff /tool-help"),
    "mergetool": _spec("t/tool: y/no-prompt /tool-help"),
    "archive": _spec("o/output: /format: /prefix: /remote: /exec: v/verbose l/list"),
    "ls-remote": _spec("/upload-pack: h/heads t/tags /refs q/quiet /exit-code"),
    "merge": _spec("m: s/strategy: X/strategy-option: F/file: /no-ff /ff /ff-only /squash /abort "
                   "/continue n/no-stat /no-edit e/edit /no-verify"),
    "cherry-pick": _spec("e/edit n/no-commit x m/mainline: s/signoff /abort /continue /skip /quit"),
    "revert": _spec("e/edit n/no-commit m/mainline: s/signoff /abort /continue /skip /quit /no-edit"),
    "submodule": _spec("q/quiet /recursive"),
    "status": _spec("s/short b/branch /porcelain? u/untracked-files? /ignored? z v/verbose"),
    "worktree": _spec("f/force b: B: /detach /lock /reason:"),
    "am": _spec("3/3way s/signoff q/quiet /abort /continue /skip"),
    "apply": _spec("/check /stat /numstat /summary /index /cached R/reverse p: /directory: /unsafe-paths v/verbose"),
    "format-patch": _spec("o/output-directory: n/numbered /stdout /cover-letter v/reroll-count:"),
    "blame": _spec("L: S: C? M? w e s"),
    "send-email": _spec("/to: /cc: /from: /smtp-server: /sendmail-cmd:"),
    "bisect": _spec(""),
    "filter-branch": _spec("f/force /env-filter: /tree-filter: /index-filter: /msg-filter: /commit-filter: "
                           "/subdirectory-filter: /tag-name-filter: /parent-filter:"),
}
_GIT = _spec(
    "C: c: /git-dir: /work-tree: /namespace: /exec-path? /config-env: /super-prefix: p/paginate P/no-pager "
    "/no-replace-objects /bare /literal-pathspecs /glob-pathspecs /noglob-pathspecs /icase-pathspecs "
    "/no-optional-locks /list-cmds: /attr-source: v/version /html-path /man-path /info-path h/help",
    subcommands=_GIT_SUBS, default_sub=_ANY_SUB,
)

_DOCKER_SUBS: dict[str, Spec] = {
    "rm": _spec("f/force v/volumes l/link"),
    "rmi": _spec("f/force /no-prune"),
    "run": _spec("d/detach i/interactive t/tty e/env: v/volume: p/publish: /name: /rm u/user: w/workdir: "
                 "/network: /net=network /entrypoint: /privileged /mount: /env-file: /platform: l/label: "
                 "m/memory: /cpus: /pid: /ipc: /cap-add: /cap-drop: /security-opt: /device: h/hostname: "
                 "/add-host: /restart: /gpus: P/publish-all /init /read-only", stop_at_operand=True),
    "exec": _spec("d/detach i/interactive t/tty e/env: u/user: w/workdir: /privileged /env-file:",
                  stop_at_operand=True),
    "build": _spec("t/tag: f/file: /build-arg: /target: /platform: /no-cache q/quiet /progress: /secret: "
                   "/ssh: o/output: /push /load"),
    "push": _spec("a/all-tags q/quiet /platform:"),
    "pull": _spec("a/all-tags q/quiet /platform:"),
    "system": _spec("a/all f/force /volumes /filter:"),
    "volume": _spec("a/all f/force /filter:"),
    "image": _spec("a/all f/force /filter:"),
    "container": _spec("a/all f/force v/volumes /filter:"),
    "login": _spec("u/username: p/password: /password-stdin"),
    "compose": _spec("f/file: p/project-name: /profile: /env-file: /project-directory:"),
    "cp": _spec("a/archive L/follow-link q/quiet"),
}
_DOCKER = _spec(
    "/config: c/context: D/debug H/host: l/log-level: /tls /tlscacert: /tlscert: /tlskey: /tlsverify "
    "v/version h/help",
    subcommands=_DOCKER_SUBS, default_sub=_ANY_SUB,
    sub_aliases={"remove": "rm"},
)

# kubectl (cobra) accepts its flags anywhere: one spec serves every subcommand.
_KUBECTL_FLAGS = _spec(
    "n/namespace: /context: /cluster: /kubeconfig: s/server: /token: /user: /as: /as-group: /request-timeout: "
    "/insecure-skip-tls-verify /certificate-authority: v: A/all-namespaces l/selector: o/output: f/filename: "
    "R/recursive /field-selector: /grace-period: /force /now /dry-run? /wait /cascade? k/kustomize: "
    "c/container: i/stdin t/tty /all /image: /replicas: /type: /port: /timeout:"
)
_KUBECTL = Spec(shorts=_KUBECTL_FLAGS.shorts, longs=_KUBECTL_FLAGS.longs, values=_KUBECTL_FLAGS.values,
                attached=_KUBECTL_FLAGS.attached, subcommands={}, default_sub=_KUBECTL_FLAGS)

_NPM_FLAGS = _spec(
    "/prefix: C=/prefix w/workspace: /workspaces g/global /registry: /userconfig: /globalconfig: /cache: "
    "/loglevel: s/silent q/quiet /json /dry-run f/force /otp: /tag: /access: D/save-dev P/save-prod "
    "S/save E/save-exact O/save-optional B/save-bundle y/yes /ignore-scripts /legacy-peer-deps /omit: "
    "/include: /no-save /package: /call: c=/call /if-present /workspace-root /pack-destination: /location:"
)
_NPM = Spec(shorts=_NPM_FLAGS.shorts, longs=_NPM_FLAGS.longs, values=_NPM_FLAGS.values, subcommands={},
            default_sub=_NPM_FLAGS,
            sub_aliases={"i": "install", "in": "install", "ins": "install", "inst": "install",
                         "insta": "install", "instal": "install", "isnt": "install", "isnta": "install",
                         "isntal": "install", "isntall": "install", "add": "install",
                         "un": "uninstall", "remove": "uninstall", "rm": "uninstall", "r": "uninstall",
                         "unlink": "uninstall", "rum": "run", "urn": "run", "run-script": "run",
                         "t": "test", "tst": "test", "x": "exec", "clean-install": "ci", "ic": "ci",
                         "install-clean": "ci", "isntall-clean": "ci", "up": "update", "upgrade": "update",
                         "udpate": "update", "ls": "list", "la": "list", "ll": "list", "info": "view",
                         "show": "view", "v": "view", "c": "config", "ln": "link", "pub": "publish"})

_PIP_GLOBAL = ("/python: /isolated q/quiet v/verbose /no-cache-dir /trusted-host: /proxy: /cert: /timeout: "
               "/log: /require-virtualenv /disable-pip-version-check /no-input /root-user-action: /cache-dir: "
               "/exists-action: /retries: /no-color")
_PIP = _spec(
    _PIP_GLOBAL,
    subcommands={
        "install": _spec(_PIP_GLOBAL + " r/requirement: e/editable: U/upgrade t/target: /user /prefix: /root: "
                         "c/constraint: /no-deps /pre I/ignore-installed /force-reinstall /break-system-packages "
                         "i/index-url: /extra-index-url: f/find-links: /no-index /no-build-isolation /src:"),
        "uninstall": _spec(_PIP_GLOBAL + " y/yes r/requirement: /break-system-packages"),
        "download": _spec(_PIP_GLOBAL + " d/dest: r/requirement: i/index-url:"),
        "wheel": _spec(_PIP_GLOBAL + " w/wheel-dir: r/requirement:"),
    },
    default_sub=_spec(_PIP_GLOBAL),
)

_GREP = _spec("E/extended-regexp F/fixed-strings G/basic-regexp P/perl-regexp e/regexp: f/file: i/ignore-case y "
              "w/word-regexp x/line-regexp z/null-data s/no-messages v/invert-match V/version c/count /color? "
              "/colour? n/line-number h/no-filename H/with-filename l/files-with-matches L/files-without-match "
              "o/only-matching q/quiet /silent=q r/recursive R/dereference-recursive A/after-context: "
              "B/before-context: C/context: m/max-count: /include: /exclude: /exclude-dir: /exclude-from: "
              "/label: a/text I d/directories: D/devices: b/byte-offset u T/initial-tab Z/null /line-buffered "
              "U/binary /binary-files: /no-ignore-case")
_RG = _spec("e/regexp: f/file: /pre: /pre-glob: g/glob: /iglob: t/type: T/type-not: A/after-context: "
            "B/before-context: C/context: m/max-count: /max-depth: d=/max-depth j/threads: M/max-columns: "
            "E/encoding: /engine: r/replace: /path-separator: /sort: /sortr: /type-add: /ignore-file: /colors: "
            "/color: /context-separator: /field-match-separator: /max-filesize: i/ignore-case s/case-sensitive "
            "S/smart-case F/fixed-strings w/word-regexp x/line-regexp v/invert-match c/count "
            "l/files-with-matches n/line-number N/no-line-number H/with-filename I/no-filename o/only-matching "
            "p/pretty q/quiet u/unrestricted a/text z/search-zip L/follow P/pcre2 U/multiline /hidden "
            "/no-ignore /files /json /vimgrep 0/null /no-heading /heading /trim /stats /debug /line-buffered "
            "/no-config")

_GH_FLAGS = _spec("X/method: f/raw-field: F/field: H/header: /input: q/jq: t/template: p/preview: /hostname: "
                  "R/repo: /paginate i/include /silent /cache: b/body: B/base: /head: T/title: l/label: "
                  "a/assignee: r/reviewer: m/milestone: w/web d/draft /fill /body-file: "
                  "L/limit: s/state: A/author: /json: e/exit-status")
_GH = Spec(shorts=_GH_FLAGS.shorts, longs=_GH_FLAGS.longs, values=_GH_FLAGS.values, subcommands={},
           default_sub=_GH_FLAGS)

_CATALOGUE: dict[str, Spec] = {
    "gh": _GH,
    "rm": _spec("f/force i I /interactive? r/recursive R=r d/dir v/verbose /one-file-system /no-preserve-root "
                "/preserve-root? /help /version"),
    "cp": _spec("a/archive b /backup? f/force i/interactive H l/link L/dereference n/no-clobber "
                "P/no-dereference p R/recursive r=R s/symbolic-link S/suffix: t/target-directory: "
                "T/no-target-directory u/update? v/verbose x/one-file-system Z /preserve? /no-preserve: /parents "
                "/reflink? /sparse: /strip-trailing-slashes /attributes-only /copy-contents /remove-destination "
                "/context? /debug"),
    "mv": _spec("b /backup? f/force i/interactive n/no-clobber S/suffix: t/target-directory: "
                "T/no-target-directory u/update? v/verbose Z/context /strip-trailing-slashes /exchange /no-copy"),
    "install": _spec("b /backup? c C/compare d/directory D g/group: m/mode: o/owner: p/preserve-timestamps "
                     "s/strip /strip-program: S/suffix: t/target-directory: T/no-target-directory v/verbose Z"),
    "ln": _spec("b /backup? d/directory F=d f/force i/interactive L/logical n/no-dereference P/physical "
                "r/relative s/symbolic S/suffix: t/target-directory: T/no-target-directory v/verbose"),
    "chmod": _spec("c/changes f/silent /quiet=f v/verbose R/recursive /reference: /preserve-root "
                   "/no-preserve-root"),
    "chown": _spec("c/changes f/silent /quiet=f v/verbose R/recursive H L P h/no-dereference /dereference "
                   "/from: /reference: /preserve-root /no-preserve-root"),
    "mkdir": _spec("m/mode: p/parents v/verbose Z /context?"),
    "touch": _spec("a c/no-create d/date: f h/no-dereference m r/reference: t: /time:"),
    "tee": _spec("a/append i/ignore-interrupts p /output-error?"),
    "truncate": _spec("c/no-create o/io-blocks r/reference: s/size:"),
    "shred": _spec("f/force n/iterations: s/size: u /remove? v/verbose x/exact z/zero /random-source:"),
    "dd": Spec(),
    "sed": _spec("n/quiet /silent=n e/expression: f/file: i/in-place? l/line-length: E/regexp-extended r=E "
                 "s/separate u/unbuffered z/null-data /posix /debug /sandbox /follow-symlinks b/binary"),
    "awk": _spec("F/field-separator: v/assign: f/file: e/source: i/include: l/load: E/exec: b c d? D? o? p? "
                 "P r s? S t V W: M L? O N n /sandbox"),
    "tar": _spec("A/catenate /concatenate=A c/create d/diff /compare=d /delete r/append t/list u/update "
                 "x/extract /get=x f/file: C/directory: z/gzip /gunzip=z /ungzip=z j/bzip2 J/xz Z/compress "
                 "a/auto-compress I/use-compress-program: v/verbose k/keep-old-files p/preserve-permissions "
                 "P/absolute-names T/files-from: X/exclude-from: /exclude: h/dereference O/to-stdout "
                 "/to-command: /checkpoint-action: /checkpoint? F/info-script: /new-volume-script=F "
                 "/rsh-command: /overwrite /remove-files /strip-components: /transform: /xform=transform "
                 "g/listed-incremental: N/newer: /owner: /group: /mode: /zstd /lzip /lzma W/verify "
                 "L/tape-length: b/blocking-factor: H/format: /null /wildcards /anchored /recursion "
                 "/no-recursion /one-file-system /same-owner /no-same-owner"),
    "find": Spec(single_dash=True, values=frozenset({
        "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-type",
        "-xtype", "-user", "-group", "-perm", "-size", "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin",
        "-newer", "-anewer", "-cnewer", "-maxdepth", "-mindepth", "-fprint", "-fprint0", "-fls", "-printf",
        "-samefile", "-inum", "-links", "-uid", "-gid", "-fstype", "-context", "-used", "-lname", "-ilname",
        "-regextype", "-files0-from", "-D", "-O"})),
    "curl": _spec("d/data: /data-binary: /data-raw: /data-ascii: /data-urlencode: /json: F/form: /form-string: "
                  "T/upload-file: X/request: G/get I/head H/header: o/output: O/remote-name J/remote-header-name "
                  "K/config: b/cookie: c/cookie-jar: D/dump-header: u/user: A/user-agent: e/referer: x/proxy: "
                  "s/silent S/show-error f/fail L/location k/insecure v/verbose i/include w/write-out: "
                  "m/max-time: /connect-timeout: r/range: C/continue-at: z/time-cond: E/cert: /key: /cacert: "
                  "/capath: /url: /output-dir: /create-dirs 4/ipv4 6/ipv6 0/http1.0 /http1.1 /http2 /compressed "
                  "N/no-buffer n/netrc /netrc-file: q/disable /trace: /trace-ascii: /stderr: /variable: "
                  "/expand-url: /expand-data: /request-target: /resolve: /retry: /unix-socket: Z/parallel "
                  "/proto: /proto-default: /socks5: /mail-from: /mail-rcpt: /oauth2-bearer: /aws-sigv4: /fail-with-body "
                  "/libcurl: /upload-file=T /remote-name-all /location-trusted"),
    "wget": _spec("O/output-document: o/output-file: a/append-output: q/quiet v/verbose n: i/input-file: "
                  "F/force-html B/base: /config: t/tries: T/timeout: w/wait: c/continue N/timestamping "
                  "S/server-response /spider P/directory-prefix: r/recursive l/level: k/convert-links m/mirror "
                  "p/page-requisites A/accept: R/reject: D/domains: U/user-agent: e/execute: /post-data: "
                  "/post-file: /method: /body-data: /body-file: /header: /user: /password: /no-check-certificate "
                  "/load-cookies: /save-cookies: /limit-rate: x/force-directories b/background"),
    "grep": _GREP,
    "rg": _RG,
    "git": _GIT,
    "docker": _DOCKER,
    "podman": _DOCKER,
    "kubectl": _KUBECTL,
    "npm": _NPM,
    "pip": _PIP,
    "script": _spec("a/append c/command: E/echo: e/return f/flush /force B/log-io: I/log-in: O/log-out: "
                    "T/log-timing: m/logging-format: o/output-limit: q/quiet t/timing? h/help V/version"),
    "sort": _spec("o/output: k/key: t/field-separator: T/temporary-directory: S/buffer-size: /parallel: "
                  "/files0-from: /compress-program: b/ignore-leading-blanks d/dictionary-order f/ignore-case "
                  "g/general-numeric-sort h/human-numeric-sort i/ignore-nonprinting M/month-sort n/numeric-sort "
                  "R/random-sort r/reverse u/unique s/stable V/version-sort c/check? C m/merge z/zero-terminated "
                  "/random-source: /batch-size: /debug"),
    "date": _spec("d/date: f/file: I/iso-8601? R/rfc-email /rfc-3339: r/reference: s/set: u/utc /universal=u "
                  "/debug /resolution"),
    "du": _spec("0/null a/all A/apparent-size B/block-size: b/bytes c/total D/dereference-args d/max-depth: "
                "/files0-from: H h/human-readable /inodes k L/dereference l/count-links m P/no-dereference "
                "S/separate-dirs /si s/summarize t/threshold: /time? /time-style: X/exclude-from: /exclude: "
                "x/one-file-system"),
    "wc": _spec("c/bytes m/chars l/lines /files0-from: L/max-line-length w/words /total:"),
    "hostname": _spec("a/alias A/all-fqdns b/boot d/domain f/fqdn /long F/file: i/ip-address I/all-ip-addresses "
                      "s/short y/yp /nis V/version h/help"),
    "tree": _spec("a d l f x L: R P: I: /gitignore /ignore-case /matchdirs /metafirst /prune /info /infofile: "
                  "/noreport /charset: /filelimit: /timefmt: o: /fromfile /fromtabfile q N Q p u g s h /si /du D "
                  "F v t c U r /dirsfirst /filesfirst /sort: i A S n C X J H: T: /nolinks /hintro: /houtro: "
                  "/version /help"),
    "head": _spec("n/lines: c/bytes: q/quiet /silent=q v/verbose z/zero-terminated"),
    "tail": _spec("n/lines: c/bytes: q/quiet /silent=q v/verbose z/zero-terminated f/follow? F s/sleep-interval: "
                  "/pid: /retry"),
    "cat": _spec("A/show-all b/number-nonblank e E/show-ends n/number s/squeeze-blank t T/show-tabs u "
                 "v/show-nonprinting"),
    "python": _spec("c: m: W: X: Q: b B d E h i I O P q s S u v V x /check-hash-based-pycs: /help /version", stop_at_operand=True),
    "node": _spec("e/eval: p/print: r/require: i/interactive c/check /inspect? /inspect-brk? /input-type: "
                  "/import: /loader: /experimental-loader: /env-file: /test /watch v/version h/help", stop_at_operand=True),
    "perl": _spec("e: E: n p a F: i? M: m: I: c w W X s T t C? 0? d? D? l u U v V h x?", stop_at_operand=True),
    "ruby": _spec("e: E: I: r: n p a l c w W? x? C: F: 0? d v y s S h /version /disable: /enable: /jit", stop_at_operand=True),
    "php": _spec("r: B: R: E: F: f: a c: d: e h i l m n q s v w z: H S: t: /ini?", stop_at_operand=True),
    "lua": _spec("e: l: i v E W", stop_at_operand=True),
    "ssh": _spec("1 2 4 6 A a C f G g K k M N n q s T t V v X x Y y B: b: c: D: E: e: F: I: i: J: L: l: m: O: "
                 "o: P: p: Q: R: S: W: w:", stop_at_operand=True),
    "scp": _spec("3 4 6 A B C O p q R r T v c: D: F: i: J: l: o: P: S: X:"),
    "rsync": _spec("v/verbose q/quiet c/checksum a/archive r/recursive R/relative b/backup u/update l/links "
                   "L/copy-links H/hard-links p/perms E/executability o/owner g/group D t/times n/dry-run "
                   "W/whole-file x/one-file-system e/rsh: /rsync-path: /delete /remove-source-files z/compress "
                   "/exclude: /include: f/filter: /files-from: /port: /password-file: /log-file: T/temp-dir: "
                   "/partial-dir: P /progress /info: /debug: /chmod: /chown: /backup-dir:"),
    "http": _spec("f/form j/json m/multipart b/body h/headers v/verbose p/print: o/output: d/download c/continue "
                  "a/auth: A/auth-type: /session: /session-read-only: /verify: F/follow /timeout: /ignore-stdin "
                  "I=ignore-stdin /raw: x/compress /offline /check-status /pretty: s/style: q/quiet"),
    "chroot": _spec("/userspec: /groups: /skip-chdir"),
    "unzip": _spec("d: x: o n q v l t j a b C L V X K M O: I: P:"),
    "zip": _spec("r/recurse-paths j/junk-paths q/quiet v/verbose m/move d/delete u/update f/freshen "
                 "T/test TT: /unzip-command=TT e/encrypt P/password: x/exclude: i/include: 0 1 2 3 4 5 6 7 8 9 "
                 "y/symlinks b: n: t: Z:"),
    "jq": _spec("r/raw-output j/join-output a/ascii-output c/compact-output C/color-output M/monochrome-output "
                "S/sort-keys s/slurp n/null-input e/exit-status f/from-file: L: /arg: /argjson: /slurpfile: "
                "/rawfile: /args /jsonargs /tab /indent: R/raw-input /seq /stream"),
    "xargs": _spec("0/null a/arg-file: d/delimiter: E: e? I: i? L: l? n/max-args: P/max-procs: p/interactive "
                   "r/no-run-if-empty s/max-chars: t/verbose x/exit /process-slot-var: o/open-tty"),
    "patch": _spec("i/input: o/output: r/reject-file: d/directory: p/strip: F/fuzz: B/prefix: z/suffix: D/ifdef: "
                   "V/version-control: Y/basename-prefix: g/get: b/backup R/reverse N/forward s/silent f/force "
                   "t/batch E/remove-empty-files u/unified c/context n/normal e/ed l/ignore-whitespace /dry-run "
                   "/merge? /verbose /posix /binary /no-backup-if-mismatch /backup-if-mismatch /read-only: "
                   "/follow-symlinks /quoting-style: T/set-time Z/set-utc"),
    "env": _spec("i/ignore-environment 0/null u/unset: C/chdir: S/split-string: v/debug /block-signal? "
                 "/default-signal? /ignore-signal? /list-signal-handling"),
    "sudo": _spec("A/askpass b/background C/close-from: D/chdir: E/preserve-env? e/edit g/group: H/set-home "
                  "h/host: i/login K/remove-timestamp k/reset-timestamp l/list n/non-interactive P/preserve-groups "
                  "p/prompt: R/chroot: r/role: S/stdin s/shell t/type: T/command-timeout: U/other-user: "
                  "u/user: V/version v/validate"),
}
_ALIASES = {"egrep": "grep", "fgrep": "grep", "rgrep": "grep", "ggrep": "grep", "gsed": "sed", "gawk": "awk",
            "mawk": "awk", "nawk": "awk", "nodejs": "node", "pip3": "pip", "python3": "python",
            "python2": "python", "https": "http", "xh": "http", "xhs": "http", "gtar": "tar", "bsdtar": "tar",
            "docker-compose": "docker", "pod": "podman", "perl5": "perl", "pwsh": "powershell"}
_ALIAS_OPTIONS = {"egrep": "-E", "fgrep": "-F", "rgrep": "-r"}
