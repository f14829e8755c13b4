from django.apps import AppConfig

from drivers import registry

# External drivers: an agent running on a developer's machine, gated through its hooks.
HOOK_DRIVERS = {
    "claude-code-hook": "integrations.hooks.descriptor:ClaudeCodeHookDriver",
    "codex-hook": "integrations.hooks.codex_descriptor:CodexHookDriver",
}


class IntegrationsConfig(AppConfig):
    name = "integrations"
    verbose_name = "Integrations"

    def ready(self) -> None:
        for name, target in HOOK_DRIVERS.items():
            registry.register(name, target)
        # The webhook and notification outboxes listen to the activity log (approval and run events).
        from integrations import schema  # noqa: F401  (registers the token scheme for the OpenAPI schema)
        from integrations.notifications import outbox as notifications  # (models: as the webhooks' outbox)
        from integrations.webhooks import outbox  # (models: importable only once the apps are ready)

        outbox.connect()
        notifications.connect()
