"""Containers and cloud CLIs: docker and podman, kubectl, gh, terraform.

Reading (`docker ps`, `kubectl get`, `gh pr view`) is read-only; changing what runs
elsewhere is a remote mutation; deleting is destructive. `docker exec|run … CMD` and
`kubectl exec … -- CMD` are looked through (the command runs there: its paths are not the
workspace's). A configuration they are pointed at can name programs they run
(`--kubeconfig`'s credential plugins, `docker --config`'s plugins): asked about.
"""

from __future__ import annotations

from typing import Any

from ..classnames import DESTRUCTIVE, LOCAL, READ_ONLY, REMOTE
from ..command import SimpleCommand
from .invocation import Invocation, read_invocation
from .kit import Examples, Inner, Words, runs_code, with_examples
from .model import Model
from .packages import by_subcommand
from .spec import ANY_SUB, flags, spec

FAMILY = "containers and cloud CLIs"

# --- docker and podman ---------------------------------------------------------------------

_DOCKER_TABLE = {"ps": READ_ONLY, "images": READ_ONLY, "logs": READ_ONLY, "inspect": READ_ONLY, "version": READ_ONLY,
                 "info": READ_ONLY, "pull": LOCAL, "tag": LOCAL, "push": REMOTE, "login": REMOTE,
                 "rm": DESTRUCTIVE, "rmi": DESTRUCTIVE, "kill": LOCAL, "stop": LOCAL}


def _docker(inv: Invocation) -> str | None:
    sub = inv.subcommand or ""
    ops = inv.operands
    if sub in ("container", "image", "volume", "network", "system", "builder", "buildx") and ops:
        action = ops[0]
        if action in ("rm", "remove", "rmi", "prune", "kill"):
            return DESTRUCTIVE if action != "kill" else LOCAL
        if action in ("ls", "list", "inspect", "logs", "history", "df", "info"):
            return READ_ONLY
        if action == "push":
            return REMOTE
        return None
    return _DOCKER_TABLE.get(sub)


def _docker_inner(words: Words, cmd: SimpleCommand) -> list[Inner]:
    inv = read_invocation(words)
    if inv.subcommand in ("exec", "run") and len(inv.operands) >= 2:
        return [Inner(tuple(inv.operands[1:]), remote=True, start=-1)]
    return []


_DOCKER_SUBS = {
    "rm": spec("f/force v/volumes l/link"),
    "rmi": spec("f/force /no-prune"),
    "run": spec("d/detach i/interactive t/tty e/env: v/volume: p/publish: /name: /rm u/user: w/workdir: "
                "/network: /net=network /entrypoint: /privileged /mount: /env-file: /platform: l/label: "
                "m/memory: /cpus: /pid: /ipc: /cap-add: /cap-drop: /security-opt: /device: h/hostname: "
                "/add-host: /restart: /gpus: P/publish-all /init /read-only", stop_at_operand=True),
    "exec": spec("d/detach i/interactive t/tty e/env: u/user: w/workdir: /privileged /env-file:",
                 stop_at_operand=True),
    "build": spec("t/tag: f/file: /build-arg: /target: /platform: /no-cache q/quiet /progress: /secret: "
                  "/ssh: o/output: /push /load"),
    "push": spec("a/all-tags q/quiet /platform:"),
    "pull": spec("a/all-tags q/quiet /platform:"),
    "system": spec("a/all f/force /volumes /filter:"),
    "volume": spec("a/all f/force /filter:"),
    "image": spec("a/all f/force /filter:"),
    "container": spec("a/all f/force v/volumes /filter:"),
    "login": spec("u/username: p/password: /password-stdin"),
    "compose": spec("f/file: p/project-name: /profile: /env-file: /project-directory:"),
    "cp": spec("a/archive L/follow-link q/quiet"),
    "ps": spec("a/all f/filter: /format: n/last: l/latest /no-trunc q/quiet s/size"),
    "images": spec("a/all /digests f/filter: /format: /no-trunc q/quiet /tree"),
    "logs": spec("/details f/follow /since: n/tail: t/timestamps /until:"),
    "inspect": spec("f/format: s/size /type:"),
    "version": spec("f/format:"), "info": spec("f/format:"),
    "tag": spec(""), "stop": spec("t/time: s/signal:"), "kill": spec("s/signal:"),
}
_DOCKER_SUBS["container"] = spec("a/all f/force v/volumes /filter: /format: q/quiet n/last: l/latest /no-trunc s/size")
_DOCKER_SUBS["image"] = spec("a/all f/force /filter: /format: q/quiet /no-trunc /digests")
_DOCKER = spec("/config: c/context: D/debug H/host: l/log-level: /tls /tlscacert: /tlscert: /tlskey: /tlsverify "
               "v/version h/help").with_subcommands(_DOCKER_SUBS, ANY_SUB, {"remove": "rm"})


# --- kubectl -------------------------------------------------------------------------------

def _kubectl_inner(words: Words, cmd: SimpleCommand) -> list[Inner]:
    if "exec" in words and "--" in words:
        i = words.index("--") + 1
        return [Inner(tuple(words[i:]), remote=True, start=i)] if i < len(words) else []
    return []


# kubectl (cobra) accepts its flags anywhere: one spec serves every subcommand.
_KUBECTL_FLAGS = spec(
    "n/namespace: /context: /cluster: /kubeconfig: s/server: /token: /user: /as: /as-group: /request-timeout: "
    "/insecure-skip-tls-verify /certificate-authority: v: A/all-namespaces l/selector: o/output: f/filename: "
    "R/recursive /field-selector: /grace-period: /force /now /dry-run? /wait /cascade? k/kustomize: "
    "c/container: i/stdin t/tty /all /image: /replicas: /type: /port: /timeout: h/help w/watch /watch-only "
    "/show-labels /sort-by: /no-headers /output-watch-events /chunk-size: /ignore-not-found L/label-columns: "
    "/raw: /template: /show-managed-fields p/previous /since: /since-time: /tail: /timestamps /prefix "
    "/max-log-requests: /all-containers /limit-bytes: /show-kind /subresource: /client /short /show-events "
    "/containers /sort-by: /use-protocol-buffers /recursive /api-version: /api-group: /namespaced "
    "/resource: /cached /v=v"
)
_KUBECTL_TABLE = {"get": READ_ONLY, "describe": READ_ONLY, "logs": READ_ONLY, "explain": READ_ONLY,
                  "version": READ_ONLY, "top": READ_ONLY, "diff": READ_ONLY, "apply": REMOTE,
                  "create": REMOTE, "patch": REMOTE, "scale": REMOTE, "rollout": REMOTE,
                  "edit": REMOTE, "label": REMOTE, "annotate": REMOTE, "set": REMOTE,
                  "exec": REMOTE, "replace": REMOTE, "run": REMOTE, "expose": REMOTE, "cp": REMOTE,
                  "cordon": REMOTE, "uncordon": REMOTE, "taint": REMOTE, "autoscale": REMOTE,
                  "delete": DESTRUCTIVE, "drain": DESTRUCTIVE}


_SECRET_KINDS = ("secret", "secrets")
_PRINTS_DATA = ("yaml", "json", "jsonpath", "go-template", "go-template-file", "template", "templatefile",
                "custom-columns", "custom-columns-file", "jsonpath-file", "jsonpath-as-json")


def _kubectl_reveals(inv: Invocation, cmd: SimpleCommand) -> str | None:
    """`kubectl get secrets -o yaml` prints the secrets' values (`describe` only sizes;
    `get` alone only names); `kubectl config view --raw` prints the credentials the
    kubeconfig holds."""
    sub = inv.subcommand
    ops = [o.lower() for o in inv.operands]
    if sub == "get" and any(k in _SECRET_KINDS or k.split("/", 1)[0] in _SECRET_KINDS
                            or any(part.split("/", 1)[0] in _SECRET_KINDS for part in k.split(",")) for k in ops):
        output = (inv.value("-o") or "").split("=", 1)[0]
        if output in _PRINTS_DATA:
            return "`kubectl get secrets` with an output format prints the secrets' values"
    if sub == "config" and ops[:1] == ["view"] and any(w in ("--raw", "--flatten") for w in cmd.words):
        return "`kubectl config view --raw` prints the cluster credentials the kubeconfig holds"
    return None


# --- gh ------------------------------------------------------------------------------------

_GH_WRITE_VERBS = frozenset({"create", "merge", "close", "reopen", "comment", "edit", "review", "ready",
                             "upload", "transfer", "pin", "unpin", "lock", "unlock", "set", "fork",
                             "rerun", "cancel", "run", "enable", "disable", "add", "archive", "rename",
                             "sync", "login", "logout", "refresh", "setup-git", "token"})
_GH_DESTROY_VERBS = frozenset({"delete"})


def _gh(inv: Invocation) -> str | None:
    args = [w for w in inv.positionals]
    if not args:
        return READ_ONLY
    if args[0] == "api":
        method = None
        for option in ("-X", "--method"):
            if inv.values.get(option):
                method = inv.values[option][-1].upper()
        if method == "DELETE":
            return DESTRUCTIVE
        if method in ("POST", "PUT", "PATCH") or inv.options & {"-f", "-F", "--field", "--raw-field", "--input"}:
            return REMOTE
        return READ_ONLY
    verb = args[1] if len(args) > 1 else ""
    if verb in _GH_DESTROY_VERBS:
        return DESTRUCTIVE
    if verb in _GH_WRITE_VERBS:
        return REMOTE
    return READ_ONLY


_GH_FLAGS = spec("X/method: f/raw-field: F/field: H/header: /input: q/jq: t/template: p/preview: /hostname: "
                 "R/repo: /paginate i/include /silent /cache: b/body: B/base: /head: T/title: l/label: "
                 "a/assignee: r/reviewer: m/milestone: w/web d/draft /fill /body-file: "
                 "L/limit: s/state: A/author: /json: e/exit-status /version h/help")


# gh's command groups and the verbs of theirs that only look (another verb is unverified:
# `gh extension install`, `gh repo clone`, `gh run download`)
_GH_GROUPS = frozenset({"pr", "issue", "repo", "release", "run", "workflow", "api", "auth", "browse", "cache",
                        "codespace", "gist", "label", "org", "project", "search", "secret", "ssh-key", "gpg-key",
                        "variable", "extension", "alias", "config", "ruleset", "attestation", "status", "help",
                        "version", "completion"})
_GH_LOOKS = frozenset({"", "view", "list", "ls", "status", "diff", "checks", "watch", "get", "verify"})


def _gh_verify(inv: Invocation, cmd: SimpleCommand) -> str | None:
    args = list(inv.positionals)
    if not args or args[0] == "api":
        return None
    if args[0] not in _GH_GROUPS:
        return f"`gh {args[0]}` is not in gh's model"
    if args[0] in ("status", "help", "version", "completion", "browse", "search"):
        return None if args[0] != "browse" else "`gh browse` opens a browser, which is not in gh's model"
    verb = args[1] if len(args) > 1 else ""
    if verb in _GH_LOOKS or _gh(inv) != READ_ONLY:
        return None
    return f"`gh {args[0]} {verb}` is not in gh's model"


_TERRAFORM = flags("-recursive -check -diff -write -list -no-color -upgrade -backend -backend-config -reconfigure "
                   "-migrate-state -force-copy -input -lock -lock-timeout -get -json -help -version -chdir -h "
                   "-compact-warnings")


def _docker_like(name: str, why: str, **names: Any) -> Model:
    return Model(name, FAMILY, "runs containers: reading is read-only, `rm`/`rmi`/`prune` destructive, `push` "
                               "remote; `exec`/`run` are looked through", options=_DOCKER, cls=_docker,
                 code=runs_code(why, frozenset({"--config"})), inner=_docker_inner, option_sensitive=True,
                 effects={"--config": "code"}, **names)


MODELS = [
    _docker_like("docker", "`docker --config` runs the plugins that configuration names",
                 aliases=("docker-compose",), dash_subcommands=("compose", "buildx")),
    _docker_like("podman", "`podman --config` uses settings that can name programs", aliases=("pod",)),
    Model("kubectl", FAMILY, "drives a Kubernetes cluster: `get`/`describe`/`logs` read, `apply`/`exec`… change "
                             "it (remote), `delete`/`drain` destroy", options=_KUBECTL_FLAGS.with_subcommands(
                                 {}, _KUBECTL_FLAGS), cls=by_subcommand(_KUBECTL_TABLE),
          code=runs_code("`kubectl --kubeconfig` runs the credential plugins that file names",
                         frozenset({"--kubeconfig"})), inner=_kubectl_inner, option_sensitive=True,
          reveals=_kubectl_reveals, effects={"--kubeconfig": "code"}),
    Model("gh", FAMILY, "GitHub's CLI: viewing is read-only, `create`/`merge`/`comment`… remote, `delete` "
                        "destructive; `gh api` by its method", options=_GH_FLAGS.with_subcommands({}, _GH_FLAGS),
          cls=_gh, network=True, option_sensitive=True, verify=_gh_verify),
    Model("terraform", FAMILY, "`fmt`/`init` local, `apply`/`import` remote, `destroy` destructive; `plan` runs the "
                               "workspace's providers (no class)", options=_TERRAFORM,
          cls=by_subcommand({"fmt": LOCAL, "init": LOCAL, "apply": REMOTE, "import": REMOTE,
                             "destroy": DESTRUCTIVE})),
]

_EXAMPLES: dict[str, Examples] = {
    "docker": {"allow": ("docker ps -a", "docker images", "docker pull python:3.12"),
               "ask": ("docker build .", "docker push x", "docker --config ./c ps"), "deny": ("docker rm -f x",)},
    "podman": {"allow": ("podman ps",), "deny": ("podman rmi x",)},
    "kubectl": {"allow": ("kubectl get pods -n web -o wide", "kubectl logs -f web-1"),
                "ask": ("kubectl apply -f x.yaml", "kubectl get secrets -o yaml"), "deny": ("kubectl delete pod x",)},
    "gh": {"allow": ("gh pr view 1", "gh run list", "gh api repos/o/r"),
           "ask": ("gh pr create", "gh extension install o/x", "gh repo clone o/r"), "deny": ("gh repo delete o/r",)},
    "terraform": {"allow": ("terraform fmt -recursive",), "ask": ("terraform plan", "terraform apply"),
                  "deny": ("terraform destroy",)},
}
MODELS = with_examples(MODELS, _EXAMPLES)
