"""Archivers, compressors and patch: they write the files an archive or a patch names.

`tar x` and `unzip` write members they do not name on their command line: the archive's
member list is read before it runs (`archives.py`) and each member decided as a write;
`patch` and `git apply` write the files their patch names. Creating an archive reads the
files it takes (`tar c`, `zip -r`: their trees, through links unless told not to).
"""

from __future__ import annotations

import posixpath

from ..classnames import LOCAL, READ_ONLY, REMOTE
from ..command import SimpleCommand
from ..fileuse import FileUse
from .coreutils import reads_all
from .invocation import Invocation
from .kit import Examples, Words, operands, runs_code, value_uses, with_examples
from .model import UNCLASSIFIED, Model
from .pagers import edits
from .spec import gnu, spec

FAMILY = "archivers"


def _tar(inv: Invocation) -> str | None:
    # `tar cf host:x src`: an archive name with a colon before any slash is on another
    # machine, reached by `rsh`/`ssh` (unless `--force-local`): the files go there
    if "--force-local" not in inv.options and any(
            ":" in name and "/" not in name.split(":", 1)[0] for name in inv.values.get("-f", ())):
        return REMOTE
    return READ_ONLY if inv.options & {"-t"} and not inv.options & {"-x", "-c", "-r", "-u"} else LOCAL


def _tar_files(inv: Invocation, words: Words) -> list[FileUse]:
    base = inv.value("-C") or ""
    base_at = inv.value_at.get("-C", ())
    archive = value_uses(inv, ("-f",), "read")
    members = [(_join(base, w), at + tuple(base_at))
               for w, at in operands(inv, words)]
    if inv.options & {"-c", "-r", "-u", "-A"}:
        deref = "-h" in inv.options  # tar -h archives what links point to
        named = [FileUse("read", "$NAMES", (), True)] if "-T" in inv.options else []  # names read from a list
        return [FileUse("write", u.word, u.at) for u in archive] + \
            [FileUse("read", w, at, True, deref=deref) for w, at in members] + value_uses(inv, ("-T",), "read") + \
            named
    if "-x" in inv.options:
        source = inv.value("-f") or ""
        if source == "-" or inv.options & {"--transform"}:
            source = ""  # from the standard input, or renamed as it is written
        try:
            strip = int(inv.value("--strip-components") or 0)
        except ValueError:
            strip, source = 0, ""
        out = archive + [FileUse("write", base or ".", tuple(base_at), True, extracts=(source, "tar", strip, False))]
        if "-P" in inv.options:
            out.append(FileUse("write", "/", (), True))  # absolute member names: anywhere
        return out
    return archive


def _join(base: str, word: str) -> str:
    return posixpath.join(base, word) if base and not word.startswith(("/", "~")) else word


def _tar_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    risky = inv.options & {"--to-command", "-I", "-F", "--rsh-command", "--new-volume-script"}
    actions = inv.values.get("--checkpoint-action", ())
    if risky or any("exec" in a for a in actions):
        return "`tar` is told to run a program"
    return None


_TAR = spec("A/catenate /concatenate=A c/create d/diff /compare=d /delete r/append t/list u/update "
            "x/extract /get=x f/file: C/directory: z/gzip /gunzip=z /ungzip=z j/bzip2 J/xz Z/compress "
            "a/auto-compress I/use-compress-program: v/verbose k/keep-old-files p/preserve-permissions "
            "P/absolute-names T/files-from: X/exclude-from: /exclude: h/dereference O/to-stdout "
            "/to-command: /checkpoint-action: /checkpoint? F/info-script: /new-volume-script=F "
            "/rsh-command: /overwrite /remove-files /strip-components: /transform: /xform=transform "
            "g/listed-incremental: N/newer: /owner: /group: /mode: /zstd /lzip /lzma W/verify "
            "L/tape-length: b/blocking-factor: H/format: /null /wildcards /anchored /recursion "
            "/no-recursion /one-file-system /same-owner /no-same-owner /help /version /force-local /exclude-vcs "
            "/exclude-vcs-ignores /exclude-caches /sort: /mtime: /numeric-owner /no-same-permissions /warning: "
            "/ignore-failed-read /skip-old-files /keep-newer-files /no-overwrite-dir /atime-preserve? /totals? "
            "/show-transformed-names /acls /no-acls /xattrs /no-xattrs /selinux /no-selinux S/sparse "
            "/occurrence? /posix o/old-archive /portability=o /delay-directory-restore /no-wildcards "
            "/ignore-case /no-ignore-case /unlink-first U=unlink-first /recursive-unlink /full-time "
            "/utc /quoting-style: /no-auto-compress /zstd /xz=J /bzip2=j /gzip=z /strip=strip-components "
            "/preserve-order s=preserve-order /same-order=preserve-order /check-links l=check-links "
            "/one-top-level? /keep-directory-symlink /backup? /suffix: /no-null /anchored /no-anchored "
            "m/touch B/read-full-records i/ignore-zeros /exclude-tag: /exclude-tag-all: /exclude-tag-under: "
            "/exclude-backups /dereference=h /hard-dereference /no-unquote /unquote /verbatim-files-from "
            "/no-verbatim-files-from /lzop /lzma /lzip /seek n=seek /no-seek /record-size: /blocking-factor=b")


def _unzip_files(inv: Invocation, words: Words) -> list[FileUse]:
    ops = operands(inv, words)
    out = [FileUse("read", w, at) for w, at in ops[:1]]
    extracts = (ops[0][0] if ops and ops[0][0] != "-" else "", "zip", 0, "-j" in inv.options)
    dest = value_uses(inv, ("-d",), "write", tree=True) or [FileUse("write", ".", (), True)]
    return out + [use._replace(extracts=extracts) for use in dest]


def _zip_files(inv: Invocation, words: Words) -> list[FileUse]:
    ops = operands(inv, words)
    recursive = "-r" in inv.options
    deref = recursive and "-y" not in inv.options  # zip stores what links point to unless -y
    listed = [FileUse("read", "$NAMES", (), recursive)] if "-@" in words or "--names-stdin" in words else []
    return [FileUse("write", w, at) for w, at in ops[:1]] + \
        [FileUse("read", w, at, recursive, deref=deref) for w, at in ops[1:]] + listed


def _patch_files(inv: Invocation, words: Words) -> list[FileUse]:
    """`patch [FILE [PATCHFILE]]`, `-o OUT`, `-i PATCHFILE`, `-r REJECTS`; without a FILE, the
    files the patch names (read from `-i FILE`, else its input: script_eval._extracted)."""
    ops = operands(inv, words)
    out = [FileUse("write", w, at) for w, at in ops[:1]] + [FileUse("read", w, at) for w, at in ops[1:2]] \
        + value_uses(inv, ("-o", "-r"), "write") + value_uses(inv, ("-i",), "read")
    if not ops and not inv.values.get("-o") and "--dry-run" not in inv.options:
        source = inv.value("-i") or "-"
        strip = inv.value("-p")
        level = int(strip) if strip is not None and strip.isdigit() else None
        if strip is not None and level is None:
            source = ""  # a strip level only known at run time
        directory, directory_at = inv.value("-d") or ".", tuple(inv.value_at.get("-d", ()))
        out.append(FileUse("write", directory, directory_at, True,
                           extracts=(source, "patch", -1 if level is None else level, False)))
    return out + value_uses(inv, ("-B",), "write")  # `-B PREFIX`: backups written at PREFIX+name


_PATCH = spec("i/input: o/output: r/reject-file: d/directory: p/strip: F/fuzz: B/prefix: z/suffix: D/ifdef: "
              "V/version-control: Y/basename-prefix: g/get: b/backup R/reverse N/forward s/silent f/force "
              "t/batch E/remove-empty-files u/unified c/context n/normal e/ed l/ignore-whitespace /dry-run "
              "/merge? /verbose /posix /binary /no-backup-if-mismatch /backup-if-mismatch /read-only: "
              "/follow-symlinks /quoting-style: T/set-time Z/set-utc /help v/version")
_ZIP = spec("r/recurse-paths j/junk-paths q/quiet v/verbose m/move d/delete u/update f/freshen "
            "T/test TT: /unzip-command=TT e/encrypt P/password: x/exclude: i/include: 0 1 2 3 4 5 6 7 8 9 "
            "y/symlinks b: n: t: Z: @/names-stdin h/help /version l/to-crlf ll/from-crlf D/no-dir-entries "
            "A/adjust-sfx F/fix g/grow o/latest-time X/no-extra z/archive-comment k/DOS-names L/license "
            "S/system-hidden w/display-counts /display-dots /display-bytes /display-globaldots /dot-size: "
            "/temp-path: /compression-method: /sf /show-files /FS /filesync /ws /wild-stop-dirs", numeric=True)
_XZ = gnu("z/compress d/decompress t/test l/list k/keep f/force c/stdout e/extreme T/threads: q/quiet v/verbose "
          "H/long-help V/version F/format: C/check: /memlimit: M: /no-adjust S/suffix: /single-stream "
          "/no-sparse /block-size: /robot /info-memory", numeric=True)
_COMPRESSORS = {
    "gzip": gnu("c/stdout d/decompress f/force k/keep l/list L/license n/no-name N/name q/quiet r/recursive "
                "/rsyncable S/suffix: /synchronous t/test v/verbose V/version 1/fast 9/best h/help",
                numeric=True),
    "gunzip": gnu("c/stdout f/force k/keep l/list n/no-name N/name q/quiet r/recursive S/suffix: /synchronous "
                  "t/test v/verbose d/decompress"),
    "bzip2": spec("h/help d/decompress z/compress k/keep f/force t/test c/stdout q/quiet v/verbose L/license "
                  "V/version s/small 1/fast 9/best", numeric=True),
    "xz": _XZ, "unxz": _XZ,
}
_COMPRESS = "compresses or expands the files it names in place"

MODELS = [
    Model("tar", FAMILY, "creates (`c`: reads its members) or extracts (`x`: writes the archive's members) "
                         "archives; `-f host:x` is another machine", aliases=("gtar", "bsdtar"), options=_TAR,
          dashless_first=True, cls=_tar, files=_tar_files, code=_tar_code, option_sensitive=True,
          effects={"-T": "reads", "--to-command": "code", "-I": "code", "-F": "code", "--rsh-command": "code",
                   "-g": "writes", "--index-file": "writes"}),
    Model("unzip", FAMILY, "extracts a zip archive's members (`-d DIR`: into DIR)", cls=LOCAL,
          options=spec("d: x: o n q v l t j a b C L V X K M O: I: P: Z h"), files=_unzip_files,
          option_sensitive=True),
    Model("zip", FAMILY, "creates a zip archive of the files it names; `-TT` runs a program", cls=LOCAL,
          options=_ZIP, files=_zip_files, option_sensitive=True, effects={"-TT": "code"},
          code=runs_code("`zip -TT` runs a program", frozenset({"-TT", "--TT", "--unzip-command"}), ("-TT",))),
    *(Model(n, FAMILY, _COMPRESS, options=_COMPRESSORS[n], cls=LOCAL, files=edits)
      for n in ("gzip", "gunzip", "bzip2", "xz", "unxz")),
    *(Model(n, FAMILY, _COMPRESS, cls=UNCLASSIFIED, files=edits) for n in ("bunzip2", "zstd", "unzstd", "lzma")),
    *(Model(n, FAMILY, "prints compressed files", cls=UNCLASSIFIED, files=reads_all)
      for n in ("zcat", "bzcat", "xzcat", "lzcat", "zstdcat")),
    Model("patch", FAMILY, "writes the files a patch names", cls=LOCAL, options=_PATCH, files=_patch_files,
          effects={"-o": "writes", "-r": "writes", "-i": "reads", "-B": "writes"}),
]

_EXAMPLES: dict[str, Examples] = {
    "tar": {"allow": ("tar czf build/src.tgz src", "tar tzf build/src.tgz"),
            "ask": ("tar xzf build/a.tgz", "tar cf host:x src", "tar -I ./x -cf a.tar src")},
    "unzip": {"ask": ("unzip build/a.zip",)},
    "zip": {"allow": ("zip -r build/src.zip src",), "ask": ("zip -TT ./x build/a.zip src",)},
    "gzip": {"allow": ("gzip -k build/log.txt",), "ask": ("gzip -c .env",)},
    "patch": {"allow": ("patch src/app.py build/fix.diff",), "ask": ("patch -p1 < build/fix.diff",)},
}


def _examples(model: Model) -> Examples | None:
    if model.known:
        return {"allow": (f"{model.name} build/x",), "ask": (f"{model.name} .env",)}
    return {"ask": (f"{model.name} build/x",)}


MODELS = with_examples(MODELS, _EXAMPLES, _examples)
