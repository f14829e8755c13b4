"""The floor module (drivers/sandbox/): its bubblewrap command line, endpoints, control
files, and one real bubblewrap process per property that a command line cannot show."""

from __future__ import annotations

import asyncio
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from approvals.policy.paths import control_file
from drivers import sandbox
from drivers.sandbox import bwrap, control, endpoints
from tests.sandbox.floorrun import requires_floor, run_in


def _floor(tmp_path: Path, **changes: object) -> sandbox.Floor:
    workspace = tmp_path / "ws"
    runtime = tmp_path / "runtime"
    workspace.mkdir(exist_ok=True)
    runtime.mkdir(exist_ok=True)
    floor = sandbox.Floor(mode="workspace-write", workspace=str(workspace), writable=(str(runtime),),
                          hidden=(str(tmp_path),), bridge_dir=str(runtime))
    return floor.replace(**changes)


def _pairs(args: list[str], option: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == option]


# --- the command line -----------------------------------------------------------------------


def test_every_namespace_is_new_and_every_capability_dropped(tmp_path: Path) -> None:
    args = bwrap.options(_floor(tmp_path), cwd=str(tmp_path / "ws"), env={})
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
                 "--die-with-parent", "--new-session", "--clearenv"):
        assert flag in args
    assert _pairs(args, "--cap-drop") == ["ALL"]
    assert args[args.index("--ro-bind"):args.index("--ro-bind") + 3] == ["--ro-bind", "/", "/"]
    assert "/tmp" in _pairs(args, "--tmpfs")


def test_a_hidden_tree_is_a_tmpfs_made_read_only_after_what_it_shows_again(tmp_path: Path) -> None:
    args = bwrap.options(_floor(tmp_path), cwd=str(tmp_path / "ws"), env={})
    hidden = str(tmp_path.resolve())
    assert hidden in _pairs(args, "--tmpfs")
    workspace_bind = args.index(str((tmp_path / "ws").resolve()))
    assert args.index(hidden) < workspace_bind < len(args) - args[::-1].index(hidden) - 1
    assert hidden in _pairs(args, "--remount-ro")


def test_a_hidden_tree_inside_the_workspace_is_hidden_again(tmp_path: Path) -> None:
    """A workspace that is a whole checkout, var directory included: var stays hidden."""
    var = tmp_path / "ws" / "var"
    var.mkdir(parents=True)
    floor = _floor(tmp_path, hidden=(str(tmp_path), str(var)))
    args = bwrap.options(floor, cwd=str(tmp_path / "ws"), env={})
    assert args.index(str(var.resolve())) > args.index(str((tmp_path / "ws").resolve()))
    assert not sandbox.visible(floor, str(var / "secret_key"))
    assert sandbox.visible(floor, str(tmp_path / "ws" / "src.py"))


def test_read_only_mode_binds_the_workspace_read_only(tmp_path: Path) -> None:
    floor = _floor(tmp_path, mode="read-only")
    args = bwrap.options(floor, cwd=floor.workspace, env={})
    workspace = str(Path(floor.workspace).resolve())
    assert workspace in _pairs(args, "--ro-bind")
    assert workspace not in _pairs(args, "--bind")
    assert str((tmp_path / "runtime").resolve()) in _pairs(args, "--bind")


def test_a_link_to_a_shown_tree_inside_a_hidden_one_is_made_again(tmp_path: Path) -> None:
    """A worktree's `.agents` links to the main checkout's: the link is recreated in the tmpfs."""
    real = tmp_path / "elsewhere" / "agents"
    real.mkdir(parents=True)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / ".agents").symlink_to(real)
    floor = _floor(tmp_path, hidden=(str(checkout),), readable=(str(checkout / ".agents"),))
    args = bwrap.options(floor, cwd=floor.workspace, env={})
    at = args.index("--symlink")
    assert args[at + 1:at + 3] == [str(real.resolve()), str(checkout / ".agents")]
    assert sandbox.visible(floor, str(checkout / ".agents" / "bin" / "claude"))
    assert not sandbox.visible(floor, str(checkout / "manage.py"))


def test_control_candidates_are_the_policys_control_files() -> None:
    for candidate in control.CANDIDATES:
        assert control_file(candidate) is not None, candidate


def test_existing_control_files_are_read_only_and_their_holder_immovable(tmp_path: Path) -> None:
    floor = _floor(tmp_path)
    ws = Path(floor.workspace)
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".mcp.json").write_text("{}")
    args = bwrap.options(floor, cwd=floor.workspace, env={})
    ro = _pairs(args, "--ro-bind")
    for relative in (".git/hooks", ".git/config", ".mcp.json"):
        assert str(ws.resolve() / relative) in ro
    assert str(ws.resolve() / ".git") in _pairs(args, "--bind")
    assert str(ws.resolve() / ".claude") not in " ".join(args)  # missing: nothing created for it


def test_the_environment_is_in_the_args_file_not_the_command_line(tmp_path: Path) -> None:
    async def prepared() -> sandbox.Launch:
        return await sandbox.prepare(_floor(tmp_path), ["true"], cwd=str(tmp_path / "ws"),
                                     env={"ANTHROPIC_API_KEY": "sk-secret"}, bridge_dir=tmp_path / "runtime")

    launch = asyncio.run(prepared())
    try:
        assert "sk-secret" not in " ".join(launch.argv)
        assert launch.argv[1:3] == ["--args", str(launch.pass_fds[-1])]
    finally:
        launch.close_fds()


# --- endpoints ------------------------------------------------------------------------------


def test_a_loopback_endpoint_is_bridged_on_its_own_address_and_port() -> None:
    (bridge,), remote = endpoints.reach(["http://127.0.0.1:8123/v1"])
    assert (bridge.inside_host, bridge.inside_port, bridge.target_host, bridge.target_port) == ("127.0.0.1", 8123, "127.0.0.1", 8123)
    assert remote == []
    assert {b.inside_host for b in endpoints.reach(["http://localhost:9000"])[0]} == {"127.0.0.1", "::1"}


def test_a_remote_model_host_is_left_to_the_egress_proxy(tmp_path: Path) -> None:
    floor = _floor(tmp_path).reaching(["https://api.anthropic.com", "https://api.openai.com/v1", "http://10.1.2.3:8000"])
    assert floor.bridges == ()
    assert floor.model_hosts == ("api.anthropic.com:443", "api.openai.com:443", "10.1.2.3:8000")


def test_a_url_that_names_no_http_endpoint_is_refused() -> None:
    with pytest.raises(endpoints.EndpointError, match="not an http"):
        endpoints.reach(["ftp://example.com/"])


def test_the_endpoints_an_environment_names_are_its_base_urls() -> None:
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:1", "PATH": "/usr/bin", "X_BASE_URL": "not a url"}
    assert endpoints.urls_in_env(env) == ["http://127.0.0.1:1"]


def test_reaching_the_same_endpoint_twice_adds_one_bridge(tmp_path: Path) -> None:
    floor = _floor(tmp_path).reaching(["http://127.0.0.1:1"]).reaching(["http://127.0.0.1:1"])
    assert len(floor.bridges) == 1


def test_the_proxy_seam_bridges_its_socket_and_sets_the_proxy_variables(tmp_path: Path) -> None:
    floor = _floor(tmp_path).reaching(["https://api.anthropic.com"]).with_proxy("/run/egress.sock", inside_port=3128)
    assert floor.sockets == (sandbox.SocketBridge("/run/egress.sock", 3128),)
    assert floor.env["HTTPS_PROXY"] == floor.env["https_proxy"] == "http://127.0.0.1:3128"
    assert floor.env["NO_PROXY"].split(",") == ["127.0.0.1", "::1", "localhost"]
    assert floor.model_hosts == ("api.anthropic.com:443",)


# --- real bubblewrap ------------------------------------------------------------------------


@requires_floor
def test_a_process_writes_its_workspace_and_nothing_else(tmp_path: Path) -> None:
    floor = _floor(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    run_in(floor, f"touch ok.txt; touch {outside}/escaped.txt; touch /etc/escaped")
    assert (Path(floor.workspace) / "ok.txt").exists()
    assert not (outside / "escaped.txt").exists()
    # The hidden tree is empty inside, but for the mount points of what it shows again.
    assert sorted(run_in(floor, f"ls {tmp_path}").stdout.split()) == ["runtime", "ws"]


@requires_floor
def test_control_files_stay_read_only_and_missing_ones_are_not_created(tmp_path: Path) -> None:
    floor = _floor(tmp_path)
    ws = Path(floor.workspace)
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    run_in(floor, "echo evil > .git/hooks/pre-commit; echo evil >> .git/config; mv .git .git-old; touch .git/index")
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert (ws / ".git" / "index").exists()  # git itself keeps working
    assert sorted(p.name for p in ws.iterdir()) == [".git"]  # no mount point left behind


@requires_floor
def test_a_bridge_reaches_its_loopback_endpoint_and_nothing_else(tmp_path: Path, http_server: int) -> None:
    floor = _floor(tmp_path).reaching([f"http://127.0.0.1:{http_server}"])
    done = run_in(floor, f"curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{http_server}/; echo; "
                         f"curl -s -o /dev/null -w '%{{http_code}}' --max-time 2 http://127.0.0.1:{http_server + 1}/")
    assert done.stdout.splitlines()[0] == "200"
    assert done.stdout.splitlines()[1] == "000"


@requires_floor
def test_the_proxy_seam_carries_a_connect_to_the_proxy_socket(tmp_path: Path) -> None:
    """What the egress proxy will get: a process inside that uses HTTPS_PROXY (set by the
    seam) sends its CONNECT through the bridge to the proxy's Unix socket."""
    path = tmp_path / "egress.sock"
    received: list[bytes] = []
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            received.append(conn.recv(4096))

    threading.Thread(target=serve, daemon=True).start()
    floor = _floor(tmp_path).reaching(["https://api.anthropic.com"]).with_proxy(str(path))
    try:
        run_in(floor, "curl -s --max-time 3 https://api.anthropic.com/v1/messages", env={"PATH": "/usr/bin:/bin"})
    finally:
        server.close()
    assert received and received[0].startswith(b"CONNECT api.anthropic.com:443 HTTP/1.1")


@requires_floor
def test_the_probe_finds_the_floor_available() -> None:
    assert sandbox.availability(refresh=True) == sandbox.Availability(True)


@pytest.fixture
def http_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_the_floor_module_imports_no_django() -> None:
    import subprocess
    import sys

    from tests.processes import ROOT

    code = ("import sys, drivers.sandbox; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('django', 'rest_framework', 'channels')]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
