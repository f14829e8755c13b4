"""The hook gateway: Gatehouse for agents it does not start (Claude Code's command hooks).

- `descriptor`: the external driver `claude-code-hook` (listed, never executed by a worker).
- `gateway`: the writes (hook session and run, the gated step, results, session end).
- `views`: the async HTTP endpoints `scripts/gatehouse-hook` calls, and the long-poll.
"""
