"""Deciding away from the console (issue 32.4): notifications that carry the decision.

- `outbox`: when an approval opens, one row per message (an e-mail per person, the chat
  message), written in the gate's transaction like a webhook delivery; nothing is sent there.
- `recipients`: who hears of it (the policy's `notify_group`, each member's preferences).
- `links`: signed one-tap links `/a/<token>/`, bound to the approval's id and hash, one
  person, one action; single use, expiring with the approval's deadline.
- `render`: what a message says (agent text redacted, truncated, escaped).
- `sender`: the worker's loop that sends due messages (SMTP through Django's mail
  framework; the chat webhook through the webhooks' address checks), with retries.
- `views`: the link page and a person's notification preferences (`/me/`).
"""
