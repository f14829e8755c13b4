"""What an extraction writes: an archive's members are decided as the writes they are.

`tar -xf` and `unzip` name no file they write; before, any archive extracted into the
workspace was a local change, whatever it held (`.git/hooks/pre-commit`, a `sub/.git`
pointing git at settings elsewhere, `.claude/settings.json`, a link out of the workspace).
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from approvals.policy import DEFAULT_POLICY, PathContext
from approvals.policy.archives import MEMBER_LIMIT, members

from .policytest import assert_cases, bash


def _tar(path: Path, names: list[str], links: tuple[tuple[str, str], ...] = (), mode: str = "w:gz") -> None:
    with tarfile.open(path, mode) as archive:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 1
            archive.addfile(info, io.BytesIO(b"x"))
        for name, target in links:
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)


def _bash(decision: str, *commands: str) -> list:
    return [("bash", bash(c), decision, None) for c in commands]


def _zip(path: Path, names: list[str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, "x")


@pytest.fixture
def archives(sandbox):
    ws = Path(sandbox.workspace)
    _tar(ws / "ok.tgz", ["pkg/a.py", "pkg/b/c.txt"])
    _tar(ws / "plain.tar", ["pkg/a.py"], mode="w")
    _tar(ws / "hooks.tgz", ["pkg/a.py", ".git/hooks/pre-commit"])
    _tar(ws / "claude.tar.xz", ["proj/.claude/settings.json"], mode="w:xz")
    _tar(ws / "gitfile.tbz", ["sub/.git"], mode="w:bz2")
    _tar(ws / "link-out.tgz", ["a"], links=(("escape", "/etc"),))
    _tar(ws / "link-in.tgz", ["a"], links=(("here", "a"),))
    _tar(ws / "up.tgz", ["../../../elsewhere/x"])
    _tar(ws / "deep.tgz", ["top/.git/hooks/x"])
    _tar(ws / "env.tgz", [".env"])
    _tar(ws / "through.tgz", ["etc-link/cron.d/job", "rc"])  # through links already in the workspace
    _zip(ws / "ok.zip", ["src/ok.py"])
    _zip(ws / "hooks.zip", ["src/ok.py", ".git/hooks/post-checkout"])
    return sandbox


def test_an_extraction_is_decided_by_what_the_archive_holds(archives):
    allowed = _bash("allow", *(
        "tar xzf ok.tgz", "tar -xf plain.tar", "tar xf ok.tgz -C build", "tar xf link-in.tgz", "unzip ok.zip",
        "unzip -o ok.zip -d build", "unzip -j hooks.zip", "tar tf hooks.tgz",
    ))
    refused = _bash("deny", *(
        "tar -xzf hooks.tgz", "tar xf hooks.tgz -C build", "tar xJf claude.tar.xz", "tar xf gitfile.tbz",
        "tar xf link-out.tgz", "tar --strip-components=1 -xf deep.tgz", "unzip hooks.zip", "unzip -d out hooks.zip",
        "tar xzf through.tgz",
    ))
    asked = _bash("ask", *(
        "tar xf up.tgz",  # a member outside the workspace
        "tar xf missing.tgz", "curl -sL http://x/a.tgz | tar xz", "tar -xf - < ok.tgz",  # members not known
        "tar --transform s/a/b/ -xf ok.tgz", "unzip \"$ARCHIVE\"",
    ))
    assert_cases(DEFAULT_POLICY, allowed + refused + asked, paths=archives.context, cwd=archives.workspace)


def test_an_extraction_meets_the_edits_rules_of_what_it_writes(archives):
    policy = {**DEFAULT_POLICY, "edits": {"deny": [".env*"]}}
    assert_cases(policy, [("bash", bash("tar xzf env.tgz"), "deny", "edits.deny[0]"),
                          ("bash", bash("tar xzf ok.tgz"), "allow", None)],
                 paths=archives.context, cwd=archives.workspace)


def test_without_the_file_system_an_extraction_is_asked_about(archives):
    context = PathContext(archives.workspace, archives.context.homes, archives.context.protected_dirs, filesystem=False)
    assert_cases(DEFAULT_POLICY, _bash("ask", "tar xzf ok.tgz"), paths=context, cwd=archives.workspace)


def test_the_member_list_is_bounded(tmp_path):
    _tar(tmp_path / "many.tar", [f"f{i}" for i in range(MEMBER_LIMIT + 1)], mode="w")
    assert members(str(tmp_path / "many.tar"), "tar") is None
    (tmp_path / "junk.tgz").write_bytes(b"\x1f\x8b not really gzip")
    assert members(str(tmp_path / "junk.tgz"), "tar") is None
    _tar(tmp_path / "few.tgz", ["a/b/c", "a/d"])
    assert [m.name for m in members(str(tmp_path / "few.tgz"), "tar", strip=1) or []] == ["b/c", "d"]


GIT_DIFF = "diff --git a/{0} b/{0}\nnew file mode 100644\n--- /dev/null\n+++ b/{0}\n@@ -0,0 +1 @@\n+x\n"


@pytest.fixture
def patches(sandbox):
    ws = Path(sandbox.workspace)
    (ws / "ok.diff").write_text(GIT_DIFF.format("src/new.py"))
    (ws / "hook.diff").write_text(GIT_DIFF.format(".git/hooks/pre-commit"))
    (ws / "claude.diff").write_text(GIT_DIFF.format(".claude/settings.json"))
    (ws / "mcp.patch").write_text("--- /dev/null\n+++ .mcp.json\t2026-12-02 10:00:00\n@@ -0,0 +1 @@\n+{}\n")
    (ws / "out.diff").write_text("--- /dev/null\n+++ /srv/x\n@@ -0,0 +1 @@\n+x\n")
    (ws / "context.diff").write_text("*** a/src/app.py\n--- b/src/app.py\n***************\n*** 1 ****\n! a\n--- 1 ----\n! b\n")
    return sandbox


def test_a_patch_is_decided_by_the_files_it_names(patches):
    def heredoc(path: str) -> str:
        return "patch -p1 <<'EOF'\n" + GIT_DIFF.format(path) + "EOF"

    allowed = _bash("allow", *(
        "patch -p1 < ok.diff", "patch -p1 -i ok.diff", "git apply ok.diff", "git apply --check claude.diff",
        "git apply --stat hook.diff", "patch < context.diff", "patch src/app.py hook.diff", "patch -d src -p1 < ok.diff",
        "patch --dry-run -p1 < hook.diff", heredoc("src/b.py"), "git apply --cached ok.diff",
    ))
    refused = _bash("deny", *(
        "patch -p1 < hook.diff", "patch -p1 -i claude.diff", "patch < mcp.patch", "git apply claude.diff",
        "git apply < claude.diff", "git am claude.diff", "git apply -v hook.diff", heredoc(".git/hooks/post-merge"),
        "git apply <<'EOF'\n" + GIT_DIFF.format(".mcp.json") + "EOF",
        "git apply --cached claude.diff",  # staged, the next checkout writes it
    ))
    asked = _bash("ask", *(
        "patch -p0 < out.diff",  # a file outside the workspace
        "cat hook.diff | patch -p1", "patch -p1 < missing.diff", "patch -p\"$N\" < ok.diff",  # files not known
        "git diff HEAD~1 | git apply -R", "patch -p1 -B /srv/ < ok.diff",
    ))
    assert_cases(DEFAULT_POLICY, allowed + refused + asked, paths=patches.context, cwd=patches.workspace)


def test_names_written_the_way_the_tools_unquote_them_are_read_that_way(sandbox):
    ws = Path(sandbox.workspace)
    # git C-quotes a name (`\141` is `a`) and git apply unquotes it; GNU patch reads `Index:`
    quoted = '"b/.cl\\141ude/settings.json"'
    (ws / "quoted.diff").write_text(f'diff --git "a/.cl\\141ude/settings.json" {quoted}\nnew file mode 100644\n'
                                    f"--- /dev/null\n+++ {quoted}\n@@ -0,0 +1 @@\n+{{}}\n")
    (ws / "index.diff").write_text("Index: .git/hooks/pre-commit\n===\n@@ -0,0 +1 @@\n+x\n")
    with zipfile.ZipFile(ws / "backslash.zip", "w") as archive:  # unzip writes `.git/hooks/post-checkout`
        archive.writestr(zipfile.ZipInfo(".git\\hooks\\post-checkout"), "x")
    assert_cases(DEFAULT_POLICY, _bash("deny", "git apply quoted.diff", "patch -p1 < quoted.diff",
                                       "patch -p0 < index.diff", "unzip backslash.zip"),
                 paths=sandbox.context, cwd=sandbox.workspace)
