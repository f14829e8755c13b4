"""Core utilities that change files: create, copy, move, link, remove, change modes.

Each file they write is decided as a write of that path (`local-mutation` inside the
workspace, `outside-workspace` or `protected` elsewhere); `rm -r`/`rm -f`, `shred`, `dd`
and `truncate` are destructive. `ln -s TARGET` is a link: a target outside the workspace
makes the command `outside-workspace`.
"""

from __future__ import annotations

import posixpath

from ..classnames import DESTRUCTIVE, LOCAL
from ..fileuse import FileUse
from .invocation import Invocation
from .kit import Examples, Words, operands, value_uses, with_examples
from .model import UNCLASSIFIED, Classifier, Model
from .spec import Spec, gnu

FAMILY = "core utilities that change files"

# They act on a link itself, not on what it points to.
_NO_FOLLOW = frozenset({"rm", "unlink", "rmdir", "srm", "shred", "wipe"})
_TREE = frozenset({"rm", "chattr", "setfacl", "shred"})  # `-r`/`-R`: the whole tree


def writes_all(inv: Invocation, words: Words) -> list[FileUse]:
    """Every operand is a file written (`rm -r`: its whole tree)."""
    program = inv.program
    tree = bool(inv.options & {"-r", "-R"}) and program in _TREE
    follow = program not in _NO_FOLLOW
    return [FileUse("write", w, at, tree, follow) for w, at in operands(inv, words)]


def _modes(inv: Invocation, words: Words) -> list[FileUse]:
    """chmod/chown/chgrp: the first operand is the mode or owner (not with `--reference`)."""
    skip = 0 if "--reference" in inv.options else 1
    tree = bool(inv.options & {"-R"})
    return [FileUse("write", w, at, tree) for w, at in operands(inv, words, skip)]


def _copy(inv: Invocation, words: Words) -> list[FileUse]:
    program = inv.program
    if program == "install" and "-d" in inv.options:
        return [FileUse("write", w, at) for w, at in operands(inv, words)]
    ops = operands(inv, words)
    recursive = bool(inv.options & {"-r", "-R", "-a"}) or program == "mv"
    deref = recursive and program == "cp" and "-L" in inv.options  # cp -rL copies what links point to
    target = inv.value("-t")
    link = program == "cp" and bool(inv.options & {"-s", "-l"})
    if target is not None:
        sources, dest = ops, (target, inv.value_at.get("-t", (-1,)))
    elif len(ops) >= 2:
        sources, dest = ops[:-1], ops[-1]
    else:
        return [FileUse("read", w, at, recursive, deref=deref) for w, at in ops]
    out = []
    for word, at in sources:
        out.append(FileUse("link" if link else "read", word, at, recursive or link, deref=deref and not link))
        if program == "mv":
            out.append(FileUse("write", word, at, True, False))
        out.append(FileUse("write", posixpath.join(dest[0], posixpath.basename(word.rstrip("/")) or word),
                           at + tuple(dest[1]), recursive))
    out.append(FileUse("write", dest[0], tuple(dest[1]), recursive))
    return out


def _ln(inv: Invocation, words: Words) -> list[FileUse]:
    ops = operands(inv, words)
    symbolic = "-s" in inv.options
    target_dir = inv.value("-t")
    if target_dir is not None:
        pairs = [(w, at, posixpath.join(target_dir, posixpath.basename(w)), at) for w, at in ops]
    elif len(ops) == 1:
        word, at = ops[0]
        pairs = [(word, at, posixpath.basename(word.rstrip("/")) or ".", at)]
    elif len(ops) >= 2:
        dest, dest_at = ops[-1]
        many = len(ops) > 2
        pairs = [(w, at, posixpath.join(dest, posixpath.basename(w)) if many else dest, dest_at) for w, at in ops[:-1]]
    else:
        return []
    out = []
    for target, target_at, name, name_at in pairs:
        out.append(FileUse("write", name, name_at, True, False))
        if symbolic and not target.startswith(("/", "~", "$")):
            # a relative symlink target is read from the link's own directory
            target = posixpath.join(posixpath.dirname(name), target)
        out.append(FileUse("link", target, target_at + name_at, True))
    return out


def _dd(inv: Invocation, words: Words) -> list[FileUse]:
    out = []
    for w, at in operands(inv, words):
        if w.startswith("of="):
            out.append(FileUse("write", w[3:], at))
        elif w.startswith("if="):
            out.append(FileUse("read", w[3:], at))
    return out


def _rm(inv: Invocation) -> str | None:
    return DESTRUCTIVE if inv.options & {"-r", "-f"} else LOCAL


# (chmod reads a mode that starts with `-` as one: `chmod -w f`)
_MODE_LETTERS = " r w x X s t u g o a"
_OPTIONS = {
    "rm": gnu("f/force i I /interactive? r/recursive R=r d/dir v/verbose /one-file-system /no-preserve-root "
              "/preserve-root?"),
    "cp": gnu("a/archive b /backup? f/force i/interactive H l/link L/dereference n/no-clobber "
              "P/no-dereference p R/recursive r=R s/symbolic-link S/suffix: t/target-directory: "
              "T/no-target-directory u/update? v/verbose x/one-file-system Z /preserve? /no-preserve: /parents "
              "/reflink? /sparse: /strip-trailing-slashes /attributes-only /copy-contents /remove-destination "
              "/context? /debug /keep-directory-symlink d"),
    "mv": gnu("b /backup? f/force i/interactive n/no-clobber S/suffix: t/target-directory: "
              "T/no-target-directory u/update? v/verbose Z/context /strip-trailing-slashes /exchange /no-copy"),
    "install": gnu("b /backup? c C/compare d/directory D g/group: m/mode: o/owner: p/preserve-timestamps "
                   "s/strip S/suffix: t/target-directory: T/no-target-directory v/verbose Z /preserve-context "
                   "/context?"),
    "ln": gnu("b /backup? d/directory F=d f/force i/interactive L/logical n/no-dereference P/physical "
              "r/relative s/symbolic S/suffix: t/target-directory: T/no-target-directory v/verbose"),
    "chmod": gnu("c/changes f/silent /quiet=f v/verbose R/recursive /reference: /preserve-root "
                 "/no-preserve-root" + _MODE_LETTERS, numeric=True),
    "chown": gnu("c/changes f/silent /quiet=f v/verbose R/recursive H L P h/no-dereference /dereference "
                 "/from: /reference: /preserve-root /no-preserve-root"),
    "chgrp": gnu("c/changes f/silent /quiet=f v/verbose R/recursive H L P h/no-dereference /dereference "
                 "/reference: /preserve-root /no-preserve-root"),
    "mkdir": gnu("m/mode: p/parents v/verbose Z /context?"),
    "rmdir": gnu("/ignore-fail-on-non-empty p/parents v/verbose"),
    "touch": gnu("a c/no-create d/date: f h/no-dereference m r/reference: t: /time:"),
    "tee": gnu("a/append i/ignore-interrupts p /output-error?"),
    "truncate": gnu("c/no-create o/io-blocks r/reference: s/size:"),
    "shred": gnu("f/force n/iterations: s/size: u /remove? v/verbose x/exact z/zero /random-source:"),
    "mktemp": gnu("d/directory u/dry-run q/quiet /suffix: p: /tmpdir? t"),
}


def _mktemp(inv: Invocation, words: Words) -> list[FileUse]:
    """The file (`-d`: directory) mktemp creates: in the directory `-p DIR`/`--tmpdir=DIR`
    names, or where a template with a slash says (`mktemp build/x.XXXX`, `mktemp
    /srv/x.XXXX`); a bare template or none is made in `$TMPDIR` or `/tmp`, not decided.
    `-u` creates nothing."""
    if "-u" in inv.options:
        return []
    template = operands(inv, words)[:1]
    directories = value_uses(inv, ("-p", "--tmpdir"), "write")
    if directories:
        # each directory given is decided (the last one wins, by where it is written)
        name, name_at = template[0] if template else ("tmp.XXXXXXXXXX", ())
        return [use._replace(word=posixpath.join(use.word, name), at=use.at + name_at) for use in directories]
    if template and "/" in template[0][0] and "-t" not in inv.options:
        return [FileUse("write", *template[0])]
    return []


_SENSITIVE = frozenset({"rm", "chmod", "chown", "cp", "mv", "ln", "truncate", "shred", "dd", "install"})


def _writer(name: str, cls: str | None | Classifier, summary: str) -> Model:
    return Model(name, FAMILY, summary, cls=cls, options=_OPTIONS.get(name, Spec(known=False)), files=writes_all,
                 option_sensitive=name in _SENSITIVE)


MODELS = [
    _writer("rm", _rm, "removes the files it names (`-r`: their trees; `-r`/`-f`: destructive)"),
    _writer("rmdir", LOCAL, "removes the empty directories it names"),
    _writer("unlink", UNCLASSIFIED, "removes the file it names"),
    _writer("shred", DESTRUCTIVE, "overwrites the files it names"),
    _writer("srm", DESTRUCTIVE, "overwrites and removes the files it names"),
    _writer("wipe", UNCLASSIFIED, "overwrites the files it names"),
    _writer("truncate", DESTRUCTIVE, "cuts the files it names"),
    _writer("touch", LOCAL, "creates or dates the files it names"),
    _writer("mkdir", LOCAL, "creates the directories it names"),
    _writer("mkfifo", UNCLASSIFIED, "creates the pipes it names"),
    _writer("mknod", UNCLASSIFIED, "creates the device files it names"),
    _writer("tee", LOCAL, "writes its input to the files it names"),
    _writer("chattr", UNCLASSIFIED, "changes the attributes of the files it names"),
    _writer("setfacl", UNCLASSIFIED, "changes the access lists of the files it names"),
    *(Model(n, FAMILY, "changes the mode or owner of the files it names (the first operand is the mode)",
            cls=LOCAL, options=_OPTIONS.get(n, Spec(known=False)), files=_modes, option_sensitive=n in _SENSITIVE)
      for n in ("chmod", "chown", "chgrp")),
    *(Model(n, FAMILY, "copies or moves files: reads the sources, writes the destination", cls=LOCAL,
            options=_OPTIONS[n], files=_copy, option_sensitive=True) for n in ("cp", "mv", "install")),
    Model("ln", FAMILY, "makes links: a link's name is written, its target linked to", cls=LOCAL,
          options=_OPTIONS["ln"], files=_ln, option_sensitive=True),
    Model("dd", FAMILY, "copies `if=` to `of=`", cls=DESTRUCTIVE, options=Spec(), files=_dd, option_sensitive=True),
    Model("mktemp", FAMILY, "creates a temporary file: in `-p DIR` or where its template says, else in `/tmp`",
          options=_OPTIONS["mktemp"], cls=LOCAL, files=_mktemp),
]

_EXAMPLES: dict[str, Examples] = {
    "rm": {"allow": ("rm build/stamp",), "deny": ("rm -rf build", "rm -f build/x", "rm --recur --forc /")},
    "rmdir": {"allow": ("rmdir build/empty",)},
    "touch": {"allow": ("touch build/stamp",), "ask": ("touch /tmp/x",), "deny": ("touch ~/.bashrc",)},
    "mkdir": {"allow": ("mkdir -p build/out",), "ask": ("mkdir /tmp/x",)},
    "tee": {"allow": ("tee -a build/log",), "ask": ("tee /tmp/log",), "deny": ("tee ~/.ssh/authorized_keys",)},
    "chmod": {"allow": ("chmod +x build/run.sh", "chmod -R u+w build", "chmod -w build/x"), "ask": ("chmod 600 /tmp/x",)},
    "chown": {"allow": ("chown -R me build",)}, "chgrp": {"allow": ("chgrp staff build/x",)},
    "cp": {"allow": ("cp src/app.py build/", "cp -r src build/src"), "ask": ("cp src/app.py /tmp/",),
           "deny": ("cp x ~/.ssh/authorized_keys",)},
    "mv": {"allow": ("mv build/a build/b",), "ask": ("mv build/a /tmp/",)},
    "install": {"allow": ("install -m 755 build/a build/b",), "ask": ("install --strip-program=./x -s a b",)},
    "ln": {"allow": ("ln -s ../src build/link",), "ask": ("ln -s /tmp/x build/x",)},
    "dd": {"deny": ("dd if=/dev/zero of=build/x",)},
    "mktemp": {"allow": ("mktemp -d", "mktemp -p build", "mktemp build/x.XXXX"),
               "ask": ("mktemp -p /srv", "mktemp --tmpdir=/srv x.XXXX", "mktemp /srv/x.XXXX")},
    "truncate": {"deny": ("truncate -s 0 build/log",)},
}


def _examples(model: Model) -> Examples | None:
    if model.known and model.cls == DESTRUCTIVE:
        return {"deny": (f"{model.name} build/x",)}
    return {"ask": (f"{model.name} build/x",)} if not model.known else {"allow": (f"{model.name} build/x",)}


MODELS = with_examples(MODELS, _EXAMPLES, _examples)
