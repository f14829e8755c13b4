from django.apps import AppConfig


class DriversConfig(AppConfig):
    name = "drivers"
