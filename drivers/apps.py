from django.apps import AppConfig


class DriversConfig(AppConfig):
    name = "drivers"

    def ready(self) -> None:
        from drivers import checks  # noqa: F401  (registers the sandbox floor's system check)
