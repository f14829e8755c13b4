"""Claude Code driver: the real `claude` CLI in SDK stream-json mode. See `driver.py`."""

from .driver import DESCRIPTOR, HOOKS, ClaudeCodeDriver, find_binary

__all__ = ["DESCRIPTOR", "HOOKS", "ClaudeCodeDriver", "find_binary"]
