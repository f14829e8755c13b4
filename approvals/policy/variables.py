"""Environment variables by name: which change what runs, which look like a credential.

`risks.py` asks about every variable a command sets or uses; the program models ask too
(`export PATH=…`, `read BASH_ENV`, `printenv GITHUB_TOKEN`). Nothing here imports another
module of the policy core.
"""

from __future__ import annotations

import re

# Variables that change which program runs, how a shell or interpreter starts, or where
# tools read their configuration from.
_ENV_EXACT = frozenset({
    "PATH", "BASH_ENV", "ENV", "PROMPT_COMMAND", "PS4", "IFS", "SHELLOPTS", "BASHOPTS", "CDPATH", "GLOBIGNORE",
    "NODE_OPTIONS", "NODE_PATH", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONINSPECT", "PERL5OPT",
    "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "LESSOPEN",
    "LESSCLOSE", "SUDO_ASKPASS", "SSH_ASKPASS", "BROWSER", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS", "GCONV_PATH", "HOME", "XDG_CONFIG_HOME", "ZDOTDIR", "INPUTRC", "TERMINFO",
    "BASH_LOADABLES_PATH", "HISTFILE", "MAIL",
    # where a tool reads settings that name programs (credential plugins, wrappers, hooks)
    "KUBECONFIG", "DOCKER_CONFIG", "DOCKER_HOST", "GH_CONFIG_DIR", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
    "RUSTC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "XDG_DATA_HOME", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS",
    "CLOUDSDK_CONFIG", "GOFLAGS", "GOTOOLCHAIN", "MAVEN_OPTS", "GRADLE_OPTS", "GRADLE_USER_HOME",
    # the shell `script`, `make` and others start; options and settings files read from the
    # environment that can run a program (ripgrep's `--pre`, tar's `--to-command`, zip's
    # `-TT`, man's `-P`, a .curlrc or .wgetrc that writes anywhere, GNU parallel's options,
    # an OpenSSL engine, gpg's helpers, psql's `\!`)
    "SHELL", "RIPGREP_CONFIG_PATH", "TAR_OPTIONS", "TAPE", "ZIPOPT", "UNZIP", "UNZIPOPT", "ZIPINFO", "MANOPT", "MANPL",
    "CURL_HOME", "WGETRC", "SYSTEMWGETRC", "PARALLEL", "PARALLEL_HOME", "PARALLEL_SHELL", "OPENSSL_CONF",
    "OPENSSL_ENGINES", "OPENSSL_MODULES", "GNUPGHOME", "PSQLRC", "SQLITE_HISTORY", "BAT_CONFIG_PATH", "BAT_OPTS",
    "FZF_DEFAULT_COMMAND", "PERL5DB", "EXINIT", "VIMINIT", "MYVIMRC", "SCREENRC", "GREP_OPTIONS", "AWKPATH",
    "AWKLIBPATH", "JQ_LIBRARY_PATH", "TERMINFO_DIRS", "LOCPATH", "NLSPATH", "HOSTALIASES", "MAKEFLAGS", "MAKEFILES",
})
# Python reads many settings from the environment; these only change its output
_PYTHON_HARMLESS = frozenset({"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONHASHSEED",
                              "PYTHONUTF8", "PYTHONFAULTHANDLER", "PYTHONLEGACYWINDOWSSTDIO", "PYTHONNOUSERSITE",
                              "PYTHONSAFEPATH"})
# (and the settings of package managers and build tools: an index or a wrapper they run)
_ENV_PREFIX = ("LD_", "DYLD_", "GIT_", "BASH_FUNC_", "NPM_CONFIG_", "npm_config_", "PIP_", "UV_", "CARGO_", "YARN_",
               "PNPM_", "BUN_", "TF_", "HELM_", "BUNDLE_", "GEM_", "POETRY_", "PIPENV_",
               # less's own settings (LESSOPEN, LESSKEY_SRC, LESSSECURE, `LESS='+!cmd'`…), Python's
               # (PYTHONUSERBASE makes it run a `usercustomize.py` of that tree)
               "LESS", "PYTHON")
# GIT_PAGER, SYSTEMD_PAGER, PSQL_PAGER, BAT_PAGER, DELTA_PAGER…, and tools' other variables
# that name a program (`HG_EXTERNAL_DIFF`-style, `*_EDITOR`, `*_ASKPASS`, `*_SSH_COMMAND`)
_ENV_SUFFIX = ("_PAGER", "_EXTERNAL_DIFF", "_EDITOR", "_ASKPASS", "_SSH_COMMAND", "_DIFFTOOL", "_MERGETOOL",
               "_BROWSER", "_PROXY_COMMAND")
_GIT_HARMLESS = frozenset({"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
                           "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_TRACE",
                           "GIT_CURL_VERBOSE", "GIT_FLUSH", "GIT_MERGE_AUTOEDIT", "GIT_OPTIONAL_LOCKS"})


def risky_variable(name: str) -> bool:
    if name in _ENV_EXACT:
        return True
    if name in _GIT_HARMLESS or name in _PYTHON_HARMLESS:
        return False
    return name.startswith(_ENV_PREFIX) or name.endswith(_ENV_SUFFIX)


_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|COOKIE|SESSION|AUTH|DATABASE_URL|REDIS_URL|"
                          r"DSN|CONN)", re.IGNORECASE)


def secret_variable(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None
