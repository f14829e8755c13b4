"""Package managers and build tools.

A command that runs the project's own code, which the agent can write, has no class (the
rules or the default decide, as for `npm run`): npm's lifecycle scripts and a `binding.gyp`
(`npm install|ci|uninstall|update|pack|rebuild|link`, even with `--ignore-scripts` the
`git` program the project's `.npmrc` names), pnpm's (also `.pnpmfile.cjs`), every `yarn`
command (its `yarnPath`), `bun install` without `--ignore-scripts`, `pip install` of a
local project or from a requirements file or a local index, `uv sync|add|remove|lock`
and `uv pip install|sync|compile`, `cargo fetch|tree|metadata|add|remove` (the `rustc` the
workspace's `.cargo/config.toml` names). Publishing is a remote mutation; runners (`npx`,
`uv run`, `poetry run`…) are looked through.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Mapping

from ..classnames import DESTRUCTIVE, LOCAL, READ_ONLY, REMOTE
from ..fileuse import FileUse
from .interpreters import interpreter_code
from .invocation import Invocation
from .kit import Examples, Walk, Words, after, runner, value_uses, with_examples, workspace_venvs
from .model import Classifier, Model
from .spec import Spec, spec

FAMILY = "package managers and build tools"

# Package-manager commands that run the project's own code: npm runs package.json's
# lifecycle scripts (`preinstall`, `install`, `postinstall`, `prepare`, `prepack`, and
# `dependencies` after any change to node_modules), compiles a root `binding.gyp`, and,
# even with `--ignore-scripts`, runs the program the project's `.npmrc` names as `git` for a
# git dependency; pnpm also loads `.pnpmfile.cjs`; yarn runs the program its settings name
# (`yarnPath`) for every command.
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


def _package_manager(inv: Invocation) -> str | None:
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


def _npm_files(inv: Invocation, words: Words) -> list[FileUse]:
    if inv.subcommand in ("install", "ci", "uninstall", "update", "link", "prune", "dedupe"):
        return value_uses(inv, ("--prefix", "--cache"), "write", tree=True)  # `npm --prefix /elsewhere install`
    if inv.subcommand == "init":
        return value_uses(inv, ("--prefix", "-w"), "write", tree=True)  # `npm init -w DIR` creates DIR
    out = value_uses(inv, ("--pack-destination",), "write", tree=True)  # `npm pack --pack-destination DIR`
    action = inv.positionals[inv.operands_from] if len(inv.positionals) > inv.operands_from else ""
    if inv.subcommand == "set" or inv.subcommand == "config" and action in ("set", "delete", "rm", "edit"):
        # the user's .npmrc (or the project's, or the global one): settings such as
        # `script-shell` or `prefix` change what later npm commands run and where
        location = inv.value("--location") or ("global" if "-g" in inv.options else "user")
        out.append(FileUse("write", {"project": ".npmrc", "global": "/etc/npmrc"}.get(location, "~/.npmrc"), ()))
    return out


_NPM_FLAGS = spec(
    "/prefix: C=/prefix w/workspace: /workspaces g/global /registry: /userconfig: /globalconfig: /cache: "
    "/loglevel: s/silent q/quiet /json /dry-run f/force /otp: /tag: /access: D/save-dev P/save-prod "
    "S/save E/save-exact O/save-optional B/save-bundle y/yes /ignore-scripts /legacy-peer-deps /omit: "
    "/include: /no-save /package: /call: c=/call /if-present /workspace-root /pack-destination: /location: "
    "h/help v/version /save-peer /production /no-audit /audit /no-fund /fund /prefer-offline /prefer-online "
    "/offline /depth: /all a=all /long l=long /parseable p=parseable /global-style /no-package-lock "
    "/package-lock-only /install-strategy: /foreground-scripts /audit-level: /before: /include-workspace-root "
    "/scope: /strict-peer-deps /install-links /no-color /color: /progress /no-progress /yes /no-optional "
    "/only: /unicode /usage /browser: /editor: /fetch-retries: /fetch-timeout: /prefer-dedupe /expect-results "
    "/expect-result-count:"
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


# --- pip and uv ----------------------------------------------------------------------------

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


def _pip(inv: Invocation) -> str | None:
    sub = inv.subcommand or ""
    if sub in ("list", "show", "freeze", "check", "help", "search", "index", "inspect"):
        return READ_ONLY
    if sub in ("install", "download", "wheel"):
        return None if _pip_builds_local(inv, inv.operands) else LOCAL
    if sub in ("uninstall", "cache"):
        return LOCAL
    if not sub and inv.options & {"--version", "-V"}:
        return READ_ONLY
    return None


def _pip_files(inv: Invocation, words: Words) -> list[FileUse]:
    """Where pip installs, downloads or logs to, and the requirement files it reads; `install
    --user` installs into the user's site directory, outside the workspace."""
    user = [FileUse("write", "~/.local", (), True)] if inv.subcommand == "install" and "--user" in inv.options else []
    return value_uses(inv, ("-t", "--prefix", "--root", "-d", "-w", "--src", "--cache-dir"), "write", tree=True) \
        + value_uses(inv, ("--log",), "write") + value_uses(inv, ("-r", "-c"), "read") + user


_PIP_GLOBAL = ("/python: /isolated q/quiet v/verbose /no-cache-dir /trusted-host: /proxy: /cert: /timeout: "
               "/log: /require-virtualenv /disable-pip-version-check /no-input /root-user-action: /cache-dir: "
               "/exists-action: /retries: /no-color h/help V/version /keyring-provider: /use-feature: "
               "/no-python-version-warning /resume-retries: /client-cert: /debug")
_PIP_INDEX = (" i/index-url: /extra-index-url: /no-index f/find-links: /pre /only-binary: /no-binary: /prefer-binary "
              "/platform: /python-version: /implementation: /abi: /no-deps /progress-bar: /require-hashes")
_PIP = spec(
    _PIP_GLOBAL,
    subcommands={
        "install": spec(_PIP_GLOBAL + _PIP_INDEX + " r/requirement: e/editable: U/upgrade t/target: /user /prefix: "
                        "/root: c/constraint: I/ignore-installed /force-reinstall /break-system-packages "
                        "/no-build-isolation /src: /upgrade-strategy: /dry-run /report: /compile /no-compile "
                        "/no-warn-script-location /no-warn-conflicts /check-build-dependencies /use-pep517 "
                        "/no-use-pep517 /ignore-requires-python"),
        "uninstall": spec(_PIP_GLOBAL + " y/yes r/requirement: /break-system-packages"),
        "download": spec(_PIP_GLOBAL + _PIP_INDEX + " d/dest: r/requirement: c/constraint: /src:"),
        "wheel": spec(_PIP_GLOBAL + _PIP_INDEX + " w/wheel-dir: r/requirement: c/constraint: /src:"),
        "list": spec(_PIP_GLOBAL + " o/outdated u/uptodate e/editable l/local /user /path: /pre /format: "
                     "/not-required /exclude-editable /include-editable /exclude: i/index-url: /extra-index-url: "
                     "/no-index f/find-links:"),
        "show": spec(_PIP_GLOBAL + " f/files"),
        "freeze": spec(_PIP_GLOBAL + " r/requirement: l/local /user /path: /all /exclude-editable /exclude:"),
        "check": spec(_PIP_GLOBAL), "inspect": spec(_PIP_GLOBAL + " /local /user /path:"),
        "help": spec(_PIP_GLOBAL), "index": spec(_PIP_GLOBAL + _PIP_INDEX),
        "cache": spec(_PIP_GLOBAL + " /format:"),
    },
    default_sub=spec(_PIP_GLOBAL),
)


_PNPM = spec("r/recursive /filter: F=filter /depth: /json /long /parseable P/prod /production=prod D/dev "
             "/optional g/global C/dir: w/workspace-root s/silent /reporter: /loglevel: h/help v/version "
             "/no-optional /only: /color /no-color /aggregate-output /stream /use-stderr /workspace-packages "
             "/exclude-peers /lockfile-only /frozen-lockfile /offline /prefer-offline")
_BUN = spec("/ignore-scripts /frozen-lockfile p/production /no-save /dry-run /verbose /silent g/global /cwd: "
            "/backend: /cache-dir: /no-cache /lockfile-only f/force d/dev D=dev /optional E/exact y/yarn /trust "
            "/linker: /omit: /save-text-lockfile /concurrent-scripts: /network-concurrency: h/help v/version "
            "/revision /depth: /all")
_UV = spec("q/quiet v/verbose /color: /native-tls /offline n/no-cache /cache-dir: /python: p=python /directory: "
           "/project: /config-file: /no-config V/version h/help /preview /no-progress /managed-python "
           "/no-managed-python /format: /outdated e/editable /exclude-editable /strict /system /files "
           "/depth: d=depth /invert /all")
_CARGO = spec("/limit: /index: /registry: q/quiet v/verbose /color: /frozen /locked /offline /config: Z: "
              "h/help V/version /list /explain:")


def _uv(inv: Invocation) -> str | None:
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


def _pip_settings(walk: Walk, inv: Invocation) -> str | None:
    """A `pip.conf` in a virtual environment of the workspace: the pip of that environment
    reads it (an index, a find-links directory, a build setting of the agent's choosing)."""
    if _pip(inv) is None:
        return None  # it is decided as running the project's code already
    for venv in workspace_venvs(walk):
        conf = posixpath.join(venv, "pip.conf")
        if walk.remember(("isfile", conf), functools.partial(os.path.isfile, conf)):
            return f"may read `{conf}`, settings of the workspace's (an index, a build) the agent can write"
    return None


def by_subcommand(table: Mapping[str, str], default: str | None = None) -> Classifier:
    """A class facet that is a table of subcommands (the first operand when the model
    lists none)."""
    def classify_sub(inv: Invocation) -> str | None:
        sub = inv.subcommand if inv.has_subcommands else (inv.positionals[0] if inv.positionals else "")
        if sub is None and inv.options & {"-v", "--version", "-h", "--help"}:
            return READ_ONLY
        return table.get(sub or "", default)
    classify_sub.table = table  # type: ignore[attr-defined]  # (the catalogue shows it)
    return classify_sub


_RUNNER = "runs a package's program (looked through)"
MODELS = [
    Model("npm", FAMILY, "node's package manager: reading is read-only, installing runs the project's scripts "
                         "(no class), publishing is remote", options=_NPM, cls=_package_manager, files=_npm_files,
          inner=runner("exec", "-p --package -w --workspace"), option_sensitive=True,
          effects={"--userconfig": "settings", "--globalconfig": "settings", "--browser": "code", "--editor": "code"}),
    Model("pnpm", FAMILY, "a node package manager (as npm; also `.pnpmfile.cjs`)", cls=_package_manager,
          options=_PNPM, inner=runner("dlx", "-p --package")),
    Model("yarn", FAMILY, "a node package manager: every command runs its `yarnPath` (no class)",
          cls=_package_manager, inner=runner("dlx", "-p --package")),
    Model("bun", FAMILY, "a JavaScript runtime and package manager: `-e` runs code; `install --ignore-scripts` is "
                         "local", options=_BUN, cls=_package_manager, runs_scripts="interpreter",
          code=interpreter_code(("-e", "--eval", "-p", "--print"))),
    *(Model(n, FAMILY, _RUNNER, inner=after("-p --package")) for n in ("npx", "bunx", "pnpx")),
    Model("uvx", FAMILY, _RUNNER, inner=after("--from --with -p --python")),
    Model("pipx", FAMILY, _RUNNER, inner=runner("run", "--spec")),
    *(Model(n, FAMILY, "runs a command in the project's environment (looked through)", inner=runner("run"))
      for n in ("poetry", "pipenv")),
    Model("bundle", FAMILY, "runs a command with the project's gems (looked through)", inner=runner("exec")),
    Model("pip", FAMILY, "Python's package manager: installing from an index is local; a local project, a "
                         "requirements file or a local index builds the agent's code (no class); `--user` writes "
                         "outside the workspace", aliases=("pip3",), versioned=True, options=_PIP, cls=_pip,
          files=_pip_files, option_sensitive=True, workspace_code=_pip_settings,
          effects={"-t": "writes-tree", "--prefix": "writes-tree", "--root": "writes-tree", "-d": "writes-tree",
                   "-w": "writes-tree", "--src": "writes-tree", "--cache-dir": "writes-tree", "--log": "writes",
                   "--report": "writes", "-r": "reads", "-c": "reads", "--python": "code"}),
    Model("uv", FAMILY, "a Python project manager: sync, add, lock and pip install build the project (no class)",
          options=_UV, cls=_uv, inner=runner("run", "--with -p --python --package --project --directory"),
          effects={"--config-file": "settings"}),
    # (`cargo fetch|tree|metadata|add|remove` run the `rustc` or `rustc-wrapper` the
    # workspace's `.cargo/config.toml` names — tried with cargo 1.95: `add` and `remove`
    # lock the dependencies for the compiler's version: they have no class)
    Model("cargo", FAMILY, "Rust's build tool: `publish` and `yank` are remote, `search` read-only, the rest "
                           "builds the project (no class)", options=_CARGO, effects={"--config": "settings"},
          cls=by_subcommand({"publish": REMOTE, "yank": REMOTE, "search": READ_ONLY, "--version": READ_ONLY})),
    Model("twine", FAMILY, "uploads packages", cls=REMOTE),
]

_EXAMPLES: dict[str, Examples] = {
    "npm": {"allow": ("npm ls", "npm view react version", "npm config get prefix"),
            "ask": ("npm install", "npm run build", "npm publish", "npm ls --userconfig=./npmrc")},
    "pnpm": {"allow": ("pnpm ls --depth 0",), "ask": ("pnpm install",)}, "yarn": {"ask": ("yarn list",)},
    "bun": {"allow": ("bun install --ignore-scripts",), "ask": ("bun install", "bun -e 'console.log(1)'")},
    "pip": {"allow": ("pip install requests", "pip list --outdated", "pip show -f requests"),
            "ask": ("pip install -e .", "pip install -r requirements.txt", "pip --python ./x list"),
            "deny": ("pip install --user requests",)},
    "uv": {"allow": ("uv --version",), "ask": ("uv sync", "uv run pytest")},
    "cargo": {"allow": ("cargo search serde --limit 5",), "ask": ("cargo build", "cargo publish")},
    "twine": {"ask": ("twine upload dist/x.whl",)},
}


def _examples(model: Model) -> Examples | None:
    return {"ask": (f"{model.name} run x" if model.name in ("poetry", "pipenv", "pipx") else f"{model.name} x",)}


MODELS = with_examples(MODELS, _EXAMPLES, _examples)
