"""`manage.py runworker drivers`: channels' runworker with Gatehouse's DriverWorker, which
also reconciles queued runs and expired leases from the database on start."""

from channels.management.commands.runworker import Command as ChannelsRunworker

from drivers.worker import DriverWorker


class Command(ChannelsRunworker):
    worker_class = DriverWorker
