"""Gatehouse's own git: mirrors, run workspaces, changes, delivery commits and pushes.

Plain functions over paths (no models): the services hand in the repository's URL, its
credential and the directories. Every git process here runs outside the sandbox floor, as
the server, so none of them trusts the run's workspace: a workspace's own `.git` (its
config, hooks, attributes' filters) is never read; the changes are computed with
Gatehouse's git directory (the mirror's objects, read-only, plus a per-run object
directory and index) over the workspace's files. See docs/repositories.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Only these transports, for every git process here (no ext::, no fd::).
ALLOWED_PROTOCOLS = "file:https:http:ssh:git"
FETCH_TIMEOUT_S = 600.0
LOCAL_TIMEOUT_S = 120.0
DIFF_LIMIT = 2 * 1024 * 1024  # bytes of unified diff returned; the rest is cut (files still listed)


class GitError(Exception):
    """A git command failed; the message is scrubbed of credentials."""


@dataclass(frozen=True)
class Credential:
    kind: str = "none"  # none | token | ssh-key
    secret: str = ""
    username: str = ""


NO_CREDENTIAL = Credential()

_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@")


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """`text` without userinfo in URLs and without any of `secrets` (or a line of one)."""
    text = _USERINFO.sub(lambda m: m.group("scheme") + "***@", text)
    for secret in secrets:
        for part in [secret, *secret.splitlines()]:
            part = part.strip()
            if len(part) >= 4:
                text = text.replace(part, "***")
    return text


_REF = re.compile(r"^(?!-)(?!/)(?!.*\.\.)(?!.*//)(?!.*@\{)[A-Za-z0-9._/+-]{1,200}(?<!/)(?<!\.lock)(?<!\.)$")


def ref_problem(ref: str) -> str:
    """Why `ref` cannot be a run's starting ref ("" when it can): a branch, tag or commit name."""
    if not _REF.match(ref or ""):
        return f"ref {ref!r} is not a branch, tag or commit name (letters, digits, . _ / + -; no '..', no leading '-')"
    return ""


_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!//)[^\s]+$")


def url_problem(url: str) -> str:
    """Why `url` cannot be registered ("" when it can): a local absolute path, file://,
    https://, http://, ssh://, git:// or user@host:path, without credentials in it."""
    if not url or len(url) > 1024 or any(ch.isspace() or ord(ch) < 32 for ch in url):
        return "the URL must be a non-empty single line without spaces"
    if url.startswith("-"):
        return "the URL must not start with '-'"
    if url.startswith("/"):
        return ""
    if _SCP_LIKE.match(url):
        user = url.split("@", 1)[0]
        return "" if ":" not in user else "put the credential in the repository's credential field, not in the URL"
    match = re.match(r"^([a-z][a-z0-9+.-]*)://([^/]*)", url)
    if not match:
        return "the URL must be an absolute path, a file://, https://, http://, ssh:// or git:// URL, or user@host:path"
    scheme, authority = match.groups()
    if scheme not in {"file", "https", "http", "ssh", "git"}:
        return f"the transport {scheme!r} is not allowed (file, https, http, ssh, git)"
    if "@" in authority and (scheme != "ssh" or ":" in authority.split("@", 1)[0]):
        return "put the credential in the repository's credential field, not in the URL"
    return ""


def _base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A git environment that reads no user or system configuration and never prompts."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": tempfile.gettempdir(),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS,
        "GIT_AUTHOR_NAME": "Gatehouse",
        "GIT_AUTHOR_EMAIL": "gatehouse@localhost",
        "GIT_COMMITTER_NAME": "Gatehouse",
        "GIT_COMMITTER_EMAIL": "gatehouse@localhost",
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -F /dev/null",
    }
    if extra:
        env.update(extra)
    return env


# Options on every command: no hooks, no credential helper of anyone's, no fsmonitor, no pager.
_SAFE = ["-c", "core.hooksPath=/dev/null", "-c", "credential.helper=", "-c", "core.fsmonitor=false",
         "-c", "protocol.ext.allow=never", "--no-pager"]


def git(args: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None, secrets: Sequence[str] = (),
        timeout: float = LOCAL_TIMEOUT_S, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    try:
        done = subprocess.run(["git", *_SAFE, *args], env=_base_env(env), cwd=cwd, capture_output=True, timeout=timeout,
                              input=input, check=False)
    except subprocess.TimeoutExpired as exc:
        raise GitError(scrub(f"git {args[0]} took longer than {timeout:g} s", secrets)) from exc
    if check and done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip() or f"git {args[0]} exited with {done.returncode}"
        raise GitError(scrub(message, secrets))
    return done


@contextlib.contextmanager
def credential_env(credential: Credential, scratch: Path) -> Iterator[dict[str, str]]:
    """The environment that gives git `credential`, and nothing else does: a GIT_ASKPASS
    script reading a 0600 file (a token), or GIT_SSH_COMMAND with a 0600 key file (a key),
    in a fresh directory under `scratch` (outside every workspace), removed afterwards."""
    if credential.kind == "none" or not credential.secret:
        yield {}
        return
    scratch.mkdir(parents=True, exist_ok=True)
    holder = Path(tempfile.mkdtemp(prefix="cred-", dir=scratch))
    try:
        os.chmod(holder, 0o700)
        if credential.kind == "token":
            secret = holder / "secret"
            user = holder / "user"
            for path, value in ((secret, credential.secret), (user, credential.username or "x-access-token")):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as out:
                    out.write(value)
            askpass = holder / "askpass"
            askpass.write_text(f'#!/bin/sh\ncase "$1" in\n  Username*) cat {str(user)!r} ;;\n  *) cat {str(secret)!r} ;;\nesac\n'
                               .replace("'", '"'))
            os.chmod(askpass, 0o700)
            yield {"GIT_ASKPASS": str(askpass), "SSH_ASKPASS": str(askpass)}
        else:
            key = holder / "key"
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(credential.secret.strip() + "\n")
            known = scratch / "known_hosts"
            yield {"GIT_SSH_COMMAND": f"ssh -F /dev/null -i {key} -o IdentitiesOnly=yes -o BatchMode=yes "
                                      f"-o StrictHostKeyChecking=accept-new -o UserKnownHostsFile={known}"}
    finally:
        shutil.rmtree(holder, ignore_errors=True)


# --- The mirror ----------------------------------------------------------------------------


def mirror_path(cache_dir: Path, key: str, url: str) -> Path:
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return cache_dir / "mirrors" / f"{key}-{digest}.git"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive file lock (flock): two workers of one machine never fetch one mirror at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


_STAMP = "gatehouse-fetched"


def mirror_update(mirror: Path, *, url: str, credential: Credential, scratch: Path, max_age_s: float,
                  force: bool = False) -> bool:
    """Clone the mirror (`git clone --mirror`) or fetch it when it is older than `max_age_s`
    (or `force`), under the mirror's lock. True when it fetched. Raises GitError (scrubbed)."""
    secrets = [credential.secret] if credential.secret else []
    with locked(mirror.with_suffix(".lock")):
        stamp = mirror / _STAMP
        if mirror.exists() and not force and stamp.exists() and time.time() - stamp.stat().st_mtime < max_age_s:
            return False
        with credential_env(credential, scratch) as cred:
            if not (mirror / "HEAD").exists():
                shutil.rmtree(mirror, ignore_errors=True)
                partial = mirror.with_name(mirror.name + ".partial")
                shutil.rmtree(partial, ignore_errors=True)
                git(["clone", "--mirror", "--quiet", "--", url, str(partial)], env=cred, secrets=secrets, timeout=FETCH_TIMEOUT_S)
                # Fetch only branches and tags, pruning them; Gatehouse's own refs
                # (refs/gatehouse/bases/run-N: the runs' base commits, kept from gc) stay.
                git(["config", "--replace-all", "remote.origin.fetch", "+refs/heads/*:refs/heads/*"], cwd=str(partial))
                git(["config", "--add", "remote.origin.fetch", "+refs/tags/*:refs/tags/*"], cwd=str(partial))
                git(["config", "gc.auto", "0"], cwd=str(partial))
                partial.rename(mirror)
            else:
                git(["fetch", "--prune", "--quiet", "origin"], cwd=str(mirror), env=cred, secrets=secrets,
                    timeout=FETCH_TIMEOUT_S)
        stamp.touch()
        return True


def resolve(mirror: Path, ref: str) -> str:
    """The commit `ref` names in the mirror (a branch, a tag, a sha), or GitError."""
    for candidate in (f"refs/heads/{ref}", f"refs/tags/{ref}", ref):
        done = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{candidate}^{{commit}}"], cwd=str(mirror),
                   check=False)
        if done.returncode == 0:
            return done.stdout.decode().strip()
    raise GitError(f"the ref {ref!r} is not in the repository")


def keep_base(mirror: Path, run_key: str, sha: str) -> None:
    """A ref in the mirror that keeps a run's base commit (its objects) whatever the remote does."""
    with locked(mirror.with_suffix(".lock")):
        git(["update-ref", f"refs/gatehouse/bases/{run_key}", sha], cwd=str(mirror))


def release_base(mirror: Path, run_key: str) -> None:
    if not (mirror / "HEAD").exists():
        return
    with locked(mirror.with_suffix(".lock")):
        git(["update-ref", "-d", f"refs/gatehouse/bases/{run_key}"], cwd=str(mirror), check=False)


# --- A run's workspace ---------------------------------------------------------------------


def workspace_create(mirror: Path, path: Path, *, sha: str, branch: str, public_url: str) -> None:
    """A standalone clone of the mirror at `path` on a new branch `branch` at `sha`.

    `--no-hardlinks`: the clone's objects are copies, so nothing inside the sandbox floor
    shares an inode (or an alternates file) with the mirror, which stays invisible and
    unwritable there (docs/repositories.md says why not `git worktree add`)."""
    if path.exists() and any(path.iterdir()):
        raise GitError(f"the workspace {path} already exists and is not empty")
    path.parent.mkdir(parents=True, exist_ok=True)
    git(["clone", "--quiet", "--no-hardlinks", "--no-checkout", "--", str(mirror), str(path)])
    git(["remote", "set-url", "origin", public_url], cwd=str(path))
    git(["checkout", "--quiet", "-b", branch, sha], cwd=str(path))


def seed_index(workspace: Path, state: Path) -> None:
    """Start Gatehouse's index of a new workspace from the one its checkout just wrote (made by
    Gatehouse, before any agent ran): its stat data spares the first changes of a run from
    hashing every file. Later the workspace's own index is never read."""
    state.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(workspace / ".git" / "index", state / "index")


# --- Changes -------------------------------------------------------------------------------


@dataclass
class ChangedFile:
    path: str
    status: str
    additions: int | None
    deletions: int | None
    binary: bool
    old_path: str = ""


@dataclass
class Changes:
    base: str
    tree: str
    files: list[ChangedFile] = field(default_factory=list)
    diff: str = ""
    truncated: bool = False


_STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "C": "copied", "T": "type-changed"}


def _scratch_env(mirror: Path, state: Path, workspace: Path | None = None) -> dict[str, str]:
    """Gatehouse's view of a run: the mirror as the git directory (its objects only read:
    new blobs go to the run's own object directory), the run's own index, the workspace's
    files as the work tree — never the workspace's `.git`."""
    (state / "objects").mkdir(parents=True, exist_ok=True)
    env = {
        "GIT_DIR": str(mirror),
        "GIT_INDEX_FILE": str(state / "index"),
        "GIT_OBJECT_DIRECTORY": str(state / "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(mirror / "objects"),
    }
    if workspace is not None:
        env["GIT_WORK_TREE"] = str(workspace)
    return env


def snapshot_tree(mirror: Path, state: Path, workspace: Path, base: str) -> str:
    """The workspace's files (tracked and untracked, .gitignore respected, `.git` never) as a
    tree, from the run's index (kept between calls so unchanged files are not hashed again)."""
    env = _scratch_env(mirror, state, workspace)
    with locked(state / "lock"):
        if not (state / "index").exists():
            git(["read-tree", base], env=env)
        # -A: additions, changes and deletions; ignore-errors: an unreadable file is skipped.
        git(["-c", "core.excludesFile=/dev/null", "add", "-A", "--ignore-errors", "--", "."], env=env, cwd=str(workspace),
            check=False)
        return git(["write-tree"], env=env).stdout.decode().strip()


def changes(mirror: Path, state: Path, workspace: Path, base: str, *, limit: int = DIFF_LIMIT) -> Changes:
    tree = snapshot_tree(mirror, state, workspace, base)
    env = _scratch_env(mirror, state)
    diff_opts = ["--no-ext-diff", "--no-textconv", "--no-color", "-M", "--find-renames=50%"]
    result = Changes(base=base, tree=tree)
    numstat = git(["diff-tree", "-r", "-z", "--numstat", *diff_opts, base, tree], env=env).stdout.decode(errors="replace")
    stats: dict[str, tuple[int | None, int | None, bool]] = {}
    parts = numstat.split("\0")
    i = 0
    while i < len(parts):
        entry = parts[i]
        if not entry:
            i += 1
            continue
        added, deleted, name = entry.split("\t", 2)
        if name == "":  # a rename: "a\td\t\0old\0new"
            name = parts[i + 2]
            i += 3
        else:
            i += 1
        binary = added == "-"
        stats[name] = (None if binary else int(added), None if binary else int(deleted), binary)
    raw = git(["diff-tree", "-r", "-z", "--name-status", *diff_opts, base, tree], env=env).stdout.decode(errors="replace")
    items = raw.split("\0")
    i = 0
    while i < len(items):
        code = items[i]
        if not code:
            i += 1
            continue
        letter = code[0]
        if letter in "RC":
            old, new = items[i + 1], items[i + 2]
            i += 3
        else:
            old, new = "", items[i + 1]
            i += 2
        plus, minus, binary = stats.get(new, (0, 0, False))
        result.files.append(ChangedFile(path=new, status=_STATUS.get(letter, letter), additions=plus, deletions=minus,
                                        binary=binary, old_path=old))
    diff = git(["diff-tree", "-r", "-p", *diff_opts, base, tree], env=env).stdout
    if len(diff) > limit:
        diff, result.truncated = diff[:limit], True
    result.diff = diff.decode(errors="replace")
    return result


def delivery_commit(mirror: Path, state: Path, workspace: Path, base: str, *, message: str) -> str:
    """The workspace's state as one commit on `base` (in the run's own object directory)."""
    tree = snapshot_tree(mirror, state, workspace, base)
    env = _scratch_env(mirror, state)
    return git(["commit-tree", tree, "-p", base, "-F", "-"], env=env, input=message.encode()).stdout.decode().strip()


def tree_of(mirror: Path, state: Path, commit: str) -> str:
    return git(["rev-parse", f"{commit}^{{tree}}"], env=_scratch_env(mirror, state)).stdout.decode().strip()


def format_patch(mirror: Path, state: Path, commit: str) -> str:
    """`git format-patch --stdout` of the one commit: an mbox `git am` applies."""
    env = _scratch_env(mirror, state)
    return git(["format-patch", "--stdout", "--no-signature", "-1", commit], env=env).stdout.decode(errors="replace")


def push(mirror: Path, state: Path, *, url: str, commit: str, branch: str, credential: Credential, scratch: Path) -> None:
    """Push `commit` to `url` as refs/heads/`branch`, from Gatehouse's own git directory."""
    secrets = [credential.secret] if credential.secret else []
    with credential_env(credential, scratch) as cred:
        env = {**_scratch_env(mirror, state), **cred}
        git(["push", "--quiet", "--no-verify", "--", url, f"{commit}:refs/heads/{branch}"], env=env, secrets=secrets,
            timeout=FETCH_TIMEOUT_S)
