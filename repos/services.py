"""Repositories' writes: registering one, preparing a run's workspace from it (the worker),
a run's changes, and delivering its result (an approval of kind `delivery`, then a push by
Gatehouse itself). The git work is repos/git.py; docs/repositories.md tells the whole story."""

from __future__ import annotations

import fnmatch
import logging
import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from approvals import policy as core
from approvals.gate.asking import deadline_for
from approvals.models import Approval
from infra import broadcast
from repos import crypto, git
from repos.errors import RepositoryError
from repos.models import Delivery, Repository
from runs.events import ApprovalRequested, Event
from runs.leases import fence
from runs.models import Run
from runs.timeline import activity_record

logger = logging.getLogger(__name__)

MANAGE_PERMISSION = "repos.add_repository"


# --- Registering ---------------------------------------------------------------------------


def url_allowed(url: str) -> str:
    """Why `url` may not be registered here ("" when it may): its form, then
    GATEHOUSE_REPOSITORY_URLS (globs; empty = any)."""
    problem = git.url_problem(url)
    if problem:
        return problem
    globs = list(settings.GATEHOUSE_REPOSITORY_URLS)
    if globs and not any(fnmatch.fnmatchcase(url, pattern) for pattern in globs):
        return f"the URL is not one GATEHOUSE_REPOSITORY_URLS allows ({', '.join(globs)})"
    return ""


def repository_check(*, name: str, url: str, default_ref: str, credential_kind: str = "none", secret: str = "",
                     instance: Repository | None = None) -> None:
    """Refuse what may not be stored, naming the field (the admin form and the API)."""
    if not name or len(name) > 100 or not all(ch.isalnum() or ch in "-_" for ch in name):
        raise RepositoryError("invalid_repository", f"name {name!r} must be letters, digits, '-' or '_'", field="name")
    taken = Repository.objects.filter(name=name)
    if instance is not None and instance.pk:
        taken = taken.exclude(pk=instance.pk)
    if taken.exists():
        raise RepositoryError("invalid_repository", f"a repository named {name!r} exists already", field="name")
    problem = url_allowed(url)
    if problem:
        raise RepositoryError("invalid_repository", f"url {git.scrub(url)!r}: {problem}", field="url")
    problem = git.ref_problem(default_ref)
    if problem:
        raise RepositoryError("invalid_repository", problem, field="default_ref")
    if credential_kind not in Repository.Credential.values:
        raise RepositoryError("invalid_repository", f"credential_kind must be one of {', '.join(Repository.Credential.values)}",
                              field="credential_kind")
    if credential_kind == Repository.Credential.SSH_KEY and secret and "PRIVATE KEY" not in secret:
        raise RepositoryError("invalid_repository", "the SSH key must be a private key (PEM or OpenSSH format)",
                              field="credential")


def repository_create(*, name: str, url: str, default_ref: str = "main", credential_kind: str = "none", secret: str = "",
                      username: str = "", user: Any = None) -> Repository:
    repository_check(name=name, url=url, default_ref=default_ref, credential_kind=credential_kind, secret=secret)
    return Repository.objects.create(
        name=name, url=url, default_ref=default_ref, credential_kind=credential_kind,
        credential_username=username or "x-access-token", credential_encrypted=crypto.encrypt(secret), created_by=user,
    )


def repository_set_credential(repository: Repository, secret: str) -> None:
    """Write-only: the secret is encrypted and never read back but by Gatehouse's git."""
    repository.credential_encrypted = crypto.encrypt(secret)


def _credential(repository: Repository) -> git.Credential:
    try:
        secret = crypto.decrypt(repository.credential_encrypted)
    except crypto.CredentialUnreadable as exc:
        raise RepositoryError("repository_unavailable", f"Repository {repository.name}: {exc}") from exc
    if not secret:
        return git.NO_CREDENTIAL
    return git.Credential(kind=repository.credential_kind, secret=secret, username=repository.credential_username)


# --- A run's workspace (the worker) --------------------------------------------------------


def cache_dir() -> Path:
    return Path(settings.GATEHOUSE_REPOSITORY_CACHE_DIR)


def _mirror(repository: Repository) -> Path:
    return git.mirror_path(cache_dir(), str(repository.pk), repository.url)


def _state(run: Run) -> Path:
    """Gatehouse's own index and objects for a workspace (never inside it): named after it."""
    return cache_dir() / "runs" / Path(run.workspace).name


def _update_mirror(repository: Repository, *, force: bool = False) -> tuple[Path, bool]:
    credential = _credential(repository)
    mirror = _mirror(repository)
    try:
        fetched = git.mirror_update(mirror, url=repository.url, credential=credential, scratch=cache_dir() / "tmp",
                                    max_age_s=float(settings.GATEHOUSE_REPOSITORY_FETCH_MINUTES) * 60, force=force)
    except git.GitError as exc:
        raise RepositoryError("repository_unavailable", f"Repository {repository.name} could not be fetched: {exc}") from exc
    return mirror, fetched


def workspace_prepare(*, run_id: int, owner: str | None = None) -> Run:
    """Make the run's workspace on this machine (the worker that took it): the mirror
    (cloned, or fetched when older than GATEHOUSE_REPOSITORY_FETCH_MINUTES, under a lock),
    then a clone of it at the ref's commit on the branch `gatehouse/run-<id>`. The run's
    `workspace`, `branch` and `base_commit` are recorded (fenced by the lease).
    Raises RepositoryError (`repository_unavailable`, the git error without credentials).
    The worker calls the three parts itself, the git work off its database thread."""
    run = workspace_to_make(run_id=run_id)
    if run.workspace:
        return run
    assert run.repository is not None
    made = workspace_make(repository=run.repository, run_id=run_id, ref=run.ref)
    return workspace_record(run=run, made=made, owner=owner)


def workspace_to_make(*, run_id: int) -> Run:
    """The run with its repository; its workspace already set when it has one (a resumed run,
    a follow-up turn), which must then be on this machine."""
    run = Run.objects.select_related("repository").get(pk=run_id)
    if run.repository is None:
        raise RepositoryError("not_a_repository_run", f"Run {run_id} names no repository.")
    if run.workspace and not Path(run.workspace).is_dir():
        raise RepositoryError("workspace_not_here", f"The workspace {run.workspace} of run {run_id} is not on this machine.")
    return run


def workspace_make(*, repository: Repository, run_id: int, ref: str) -> dict[str, str]:
    """The git work (no database): mirror, ref, clone. {workspace, branch, base, ref}."""
    ref = ref or repository.default_ref
    mirror, fetched = _update_mirror(repository)
    try:
        sha = git.resolve(mirror, ref)
    except git.GitError:
        if fetched:
            raise RepositoryError("repository_unavailable", f"Repository {repository.name}: the ref {ref!r} does not exist") from None
        mirror, _ = _update_mirror(repository, force=True)  # a branch pushed since the last fetch
        try:
            sha = git.resolve(mirror, ref)
        except git.GitError:
            raise RepositoryError("repository_unavailable", f"Repository {repository.name}: the ref {ref!r} does not exist") from None
    path = Path(settings.GATEHOUSE_WORKSPACES_DIR) / f"run-{run_id}"
    branch = f"gatehouse/run-{run_id}"
    if path.exists():
        shutil.rmtree(path)  # a half-made workspace of this run (its worker died while making it)
    shutil.rmtree(cache_dir() / "runs" / path.name, ignore_errors=True)
    try:
        git.keep_base(mirror, path.name, sha)
        git.workspace_create(mirror, path, sha=sha, branch=branch, public_url=repository.url)
        git.seed_index(path, cache_dir() / "runs" / path.name)
    except git.GitError as exc:
        raise RepositoryError("repository_unavailable", f"Repository {repository.name}: {exc}") from exc
    return {"workspace": str(path), "branch": branch, "base": sha, "ref": ref}


def workspace_record(*, run: Run, made: dict[str, str], owner: str | None = None) -> Run:
    with transaction.atomic():
        fence(run.pk, owner)
        Run.objects.filter(pk=run.pk).update(workspace=made["workspace"], branch=made["branch"], base_commit=made["base"])
        activity_record(run_id=run.pk, kind="run", event=Event.RUN_WORKSPACE, owner=owner, payload={
            "repository": run.repository.name if run.repository else "", **made})
    run.workspace, run.branch, run.base_commit = made["workspace"], made["branch"], made["base"]
    return run


# --- Changes -------------------------------------------------------------------------------


def _here(run: Run) -> tuple[Repository, Path, Path]:
    repository = run.repository
    if repository is None or not run.base_commit:
        raise RepositoryError("not_a_repository_run", f"Run {run.pk} has no repository workspace (yet).")
    mirror = _mirror(repository)
    if not Path(run.workspace).is_dir() or not (mirror / "HEAD").exists():
        raise RepositoryError("workspace_not_here", f"The workspace of run {run.pk} is not on this machine (or was removed).")
    return repository, mirror, Path(run.workspace)


def run_changes(run: Run) -> git.Changes:
    """The workspace's changes against the run's base commit: tracked and untracked files
    (.gitignore respected), renames, binary files named with no content."""
    _, mirror, workspace = _here(run)
    try:
        return git.changes(mirror, _state(run), workspace, run.base_commit)
    except git.GitError as exc:
        raise RepositoryError("changes_unavailable", f"The changes of run {run.pk} cannot be read: {exc}") from exc


def _message(run: Run) -> str:
    first = (run.prompt or "").strip().splitlines()[0][:72] if (run.prompt or "").strip() else ""
    subject = first or f"Gatehouse run {run.pk}"
    return (f"{subject}\n\nThe workspace of Gatehouse run #{run.pk} ({run.driver}) on {run.base_commit[:12]}, "
            f"as one commit.\n")


def run_delivery_commit(run: Run) -> str:
    _, mirror, workspace = _here(run)
    try:
        return git.delivery_commit(mirror, _state(run), workspace, run.base_commit, message=_message(run))
    except git.GitError as exc:
        raise RepositoryError("changes_unavailable", f"The changes of run {run.pk} cannot be read: {exc}") from exc


def run_patch(run: Run) -> str:
    """The workspace's state as one commit on the base, as `git format-patch` writes it."""
    _, mirror, _ = _here(run)
    commit = run_delivery_commit(run)
    if git.tree_of(mirror, _state(run), commit) == git.tree_of(mirror, _state(run), run.base_commit):
        return ""
    return git.format_patch(mirror, _state(run), commit)


# --- Delivery ------------------------------------------------------------------------------


def delivery_request(*, run: Run, user: Any, action: str = "push") -> Delivery:
    """Ask a person to let Gatehouse push the run's branch: the workspace's state as one
    commit on the base, bound into an approval of kind `delivery` (its hash names the
    commit), in the inbox like any other. The run must have finished."""
    if action != "push":
        raise RepositoryError("invalid_delivery", f"action must be 'push', not {action!r}", field="action")
    if run.repository_id is None:
        raise RepositoryError("not_a_repository_run", f"Run {run.pk} names no repository: download its patch instead.")
    if not run.is_finished:
        raise RepositoryError("run_not_finished", f"Run {run.pk} is still {run.status}: deliver it once it has finished.")
    repository, mirror, _ = _here(run)
    commit = run_delivery_commit(run)
    if git.tree_of(mirror, _state(run), commit) == git.tree_of(mirror, _state(run), run.base_commit):
        raise RepositoryError("no_changes", f"Run {run.pk} changed nothing: there is nothing to push.")
    files = run_changes(run).files
    branch = run.branch or f"gatehouse/run-{run.pk}"
    shown_url = git.scrub(repository.url)
    request = {"tool": "gatehouse.deliver", "input": {"action": action, "repository": repository.name, "url": shown_url,
                                                      "branch": branch, "base": run.base_commit, "commit": commit}}
    presentation = {
        "title": f"Push branch {branch} to {repository.name}",
        "summary": f"{len(files)} file(s) changed, as one commit {commit[:12]} on {run.base_commit[:12]}, "
                   f"pushed by Gatehouse to {shown_url}",
        "command": f"git push {shown_url} {commit[:12]}:refs/heads/{branch}",
        "files": [{"path": f.path, "status": f.status, "additions": f.additions, "deletions": f.deletions} for f in files[:50]],
    }
    capability = {"tool": "gatehouse.deliver", "action": action, "run": run.pk, "commit": commit}
    # A push is a remote mutation: what the run policy's `approvals.confirm` asks of one
    # (typed: the branch; a second reviewer) holds for the delivery too (issue 32.2).
    confirmation = core.confirm_requirements(run.run_policy or {}).get("remote-mutation", "")
    word = branch if confirmation == "typed" else ""
    with transaction.atomic():
        Run.objects.select_for_update().filter(pk=run.pk).first()
        if Delivery.objects.filter(run=run, status__in=[Delivery.Status.PENDING, Delivery.Status.PUSHING]).exists():
            raise RepositoryError("delivery_pending", f"A delivery of run {run.pk} is already waiting or pushing.")
        approval = Approval.objects.create(
            run=run, kind=Approval.Kind.DELIVERY, subtype=action, capability=capability, presentation=presentation,
            request=request, hash=core.approval_hash(kind=Approval.Kind.DELIVERY, capability=capability,
                                                     presentation=presentation, request=request),
            deadline=deadline_for(run), confirmation=confirmation, confirmation_word=word,
        )
        delivery = Delivery.objects.create(run=run, approval=approval, action=action, branch=branch, commit=commit,
                                           requested_by=user if getattr(user, "pk", None) else None)
        requested: ApprovalRequested = {
            "approval": approval.pk, "kind": Approval.Kind.DELIVERY, "subtype": action, "commit": commit, "branch": branch,
            "by": getattr(user, "username", "") or "", "deadline": approval.deadline.isoformat() if approval.deadline else None}
        activity_record(run_id=run.pk, kind="approval", event=Event.APPROVAL_REQUESTED, payload=requested)
        broadcast.fragment_on_commit([broadcast.INBOX_GROUP, broadcast.run_console_group(run.pk)], "approval_added",
                                     approval_id=approval.pk)
    return delivery


def _finish(delivery_id: int, *, frm: str, to: str, error: str = "") -> bool:
    return Delivery.objects.filter(pk=delivery_id, status=frm).update(status=to, error=error, finished_at=timezone.now()) == 1


def deliveries_due() -> bool:
    """A decided delivery waits to be carried out (one cheap query per maintenance round)."""
    return Delivery.objects.filter(status=Delivery.Status.PENDING).exclude(approval__status=Approval.Status.PENDING).exists()


def deliveries_perform() -> list[int]:
    """Carry out decided deliveries (the worker's maintenance loop, or a test): approved ones
    whose workspace is on this machine are pushed, each claimed once (pending → pushing by
    compare-and-set); denied, expired or cancelled ones push nothing. Returns the ids done."""
    done: list[int] = []
    decided = (Delivery.objects.filter(status=Delivery.Status.PENDING)
               .exclude(approval__status=Approval.Status.PENDING).select_related("approval", "run__repository"))
    for delivery in decided:
        run, approval = delivery.run, delivery.approval
        if approval.status != Approval.Status.APPROVED:
            if _finish(delivery.pk, frm=Delivery.Status.PENDING, to=Delivery.Status.DENIED):
                activity_record(run_id=run.pk, kind="run", event=Event.RUN_DELIVERY_REFUSED, payload={
                    "delivery": delivery.pk, "approval": approval.pk, "status": approval.status, "reason": approval.reason})
                done.append(delivery.pk)
            continue
        try:
            repository, mirror, _ = _here(run)
        except RepositoryError:
            continue  # another worker's machine holds the workspace
        if not _finish(delivery.pk, frm=Delivery.Status.PENDING, to=Delivery.Status.PUSHING):
            continue
        try:
            git.push(mirror, _state(run), url=repository.url, commit=delivery.commit, branch=delivery.branch,
                     credential=_credential(repository), scratch=cache_dir() / "tmp")
        except (git.GitError, RepositoryError) as exc:
            message = str(exc)
            _finish(delivery.pk, frm=Delivery.Status.PUSHING, to=Delivery.Status.FAILED, error=message)
            activity_record(run_id=run.pk, kind="run", event=Event.RUN_DELIVERY_FAILED, payload={
                "delivery": delivery.pk, "error": message})
        else:
            _finish(delivery.pk, frm=Delivery.Status.PUSHING, to=Delivery.Status.PUSHED)
            activity_record(run_id=run.pk, kind="run", event=Event.RUN_DELIVERED, payload={
                "delivery": delivery.pk, "approval": approval.pk, "repository": repository.name, "branch": delivery.branch,
                "commit": delivery.commit, "by": approval.decided_by.get_username() if approval.decided_by else ""})
        done.append(delivery.pk)
    return done


# --- Retention -----------------------------------------------------------------------------


def workspace_forget(*, workspace: str, repository: Repository | None) -> None:
    """After retention removed a repository run's workspace: Gatehouse's own state of it
    (index, objects) and the mirror's ref that kept its base commit."""
    name = Path(workspace).name
    shutil.rmtree(cache_dir() / "runs" / name, ignore_errors=True)
    if repository is not None:
        try:
            git.release_base(_mirror(repository), name)
        except git.GitError:
            logger.warning("could not release the base of %s in %s's mirror", name, repository.name)
