"""`manage.py runworker drivers`: channels' runworker with Gatehouse's DriverWorker, which
also reconciles queued runs and expired leases from the database on start, and on SIGTERM
stops its runs resumably and frees their leases before exiting."""

from channels.management.commands.runworker import Command as ChannelsRunworker

from drivers.worker import DriverWorker


class ProcessDriverWorker(DriverWorker):
    stop_on_signals = True


class Command(ChannelsRunworker):
    worker_class = ProcessDriverWorker
