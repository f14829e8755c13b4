from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    name = "integrations"
    verbose_name = "Integrations"

    def ready(self) -> None:
        # The webhook and notification outboxes listen to the activity log (approval and run events).
        from integrations import schema  # noqa: F401  (registers the token scheme for the OpenAPI schema)
        from integrations.notifications import outbox as notifications  # (models: as the webhooks' outbox)
        from integrations.webhooks import outbox  # (models: importable only once the apps are ready)

        outbox.connect()
        notifications.connect()
