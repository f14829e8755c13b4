"""Querysets compiled once per process: the ORM writes the SQL, a hot path only runs it.

Django compiles a queryset to SQL each time it is evaluated. For the gate's reads (a run
with its session, a hook session with its run, session and policy, a token with its user)
building and compiling the queryset costs several times what the database takes to run the
statement: about 0.5 ms of Python for the hook session's four-table read against 0.1 ms in
SQLite. `Prepared` builds the queryset once per database connection's vendor, with marker
values where the call's arguments go, compiles it, and then runs that SQL with each call's
values, building rows as Django's own iterables do (`select_related`, deferred fields and
`values_list` included). The SQL is still the ORM's, from the same queryset, so there is no
second spelling of a query to keep in step with the models.

Only shapes whose arguments reach the SQL as they are given (ids, strings, booleans) can be
prepared: each marker must appear in the compiled parameters, or `Prepared` refuses the
shape when it is first used. No prefetching, no known related objects, no `values()`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any, Generic, TypeVar

from django.db import connections, transaction
from django.db.models import QuerySet
from django.db.models.query import FlatValuesListIterable, ModelIterable, ValuesListIterable, get_related_populators
from django.db.models.sql import UpdateQuery

T = TypeVar("T")

_markers = count(1)


def _marker(kind: type) -> Any:
    n = next(_markers)
    if kind is int:
        return -(7_300_000_000_000 + n)
    if kind is str:
        return f"\x00prepared-{n}\x00"
    if kind is datetime:
        return _MARKER_EPOCH + timedelta(microseconds=n)
    raise TypeError(f"Prepared: arguments are int, str or datetime, not {kind.__name__}")


# Datetime markers: instants nobody writes (a backend may turn them into strings, as
# SQLite's does: they are found in the compiled parameters as the backend adapted them).
_MARKER_EPOCH = datetime(1901, 2, 3, 4, 5, 6, tzinfo=UTC)


def _adapted(kind: type, value: Any, alias: str) -> Any:
    """An argument as the compiled statement holds it: a datetime adapted by the backend
    (`adapt_datetimefield_value`: a naive UTC string on SQLite, itself on PostgreSQL)."""
    if kind is datetime:
        return connections[alias].ops.adapt_datetimefield_value(value)
    return value


def _slots(params: list[Any], markers: tuple[Any, ...], kinds: tuple[type, ...], alias: str) -> list[tuple[int, int]]:
    """Where each argument goes: a marker's position in the compiled parameters (a parameter
    that is not a marker is a constant of the shape, kept as compiled). Refuses a shape
    in which an argument does not reach the SQL as given."""
    adapted = [_adapted(kind, marker, alias) for kind, marker in zip(kinds, markers, strict=True)]
    slots = []
    for position, value in enumerate(params):
        for argument, marker in enumerate(adapted):
            if type(value) is type(marker) and value == marker:
                slots.append((position, argument))
    found = {argument for _, argument in slots}
    if found != set(range(len(markers))):
        missing = sorted(set(range(len(markers))) - found)
        raise ValueError(f"Prepared: argument(s) {missing} do not reach the SQL as given; this shape cannot be prepared")
    return slots


# The databases' integer range: an id outside it names no row, as Django's own lookups answer
# since 5.0, instead of the driver's OverflowError (prepared shapes compare ids for equality).
_INT_RANGE = range(-(2**63), 2**63)


def _out_of_range(arguments: tuple[Any, ...]) -> bool:
    return any(type(value) is int and value not in _INT_RANGE for value in arguments)


def _checked(arguments: tuple[Any, ...], kinds: tuple[type, ...]) -> None:
    if len(arguments) != len(kinds):
        raise TypeError(f"Prepared: {len(kinds)} argument(s) expected, {len(arguments)} given")
    for value, kind in zip(arguments, kinds, strict=True):
        if type(value) is not kind:
            raise TypeError(f"Prepared: {value!r} is not {kind.__name__}")
        if isinstance(value, datetime) and value.tzinfo is None:
            raise TypeError(f"Prepared: {value!r} is a naive datetime")


class _Compiled:
    def __init__(self, queryset: QuerySet[Any], markers: tuple[Any, ...], kinds: tuple[type, ...]) -> None:
        if queryset._prefetch_related_lookups or queryset._known_related_objects:  # type: ignore[attr-defined]
            raise ValueError("Prepared: a queryset with prefetching or known related objects cannot be prepared")
        self.iterable = queryset._iterable_class
        if self.iterable not in (ModelIterable, ValuesListIterable, FlatValuesListIterable):
            raise ValueError(f"Prepared: {self.iterable.__name__} is not supported")
        self.db = queryset.db
        self.locks = queryset.query.select_for_update
        self.compiler = queryset.query.get_compiler(using=self.db)
        self.sql, params = self.compiler.as_sql()
        self.params = list(params)
        self.kinds = kinds
        self.slots = _slots(self.params, markers, kinds, self.db)
        if self.iterable is ModelIterable:
            klass_info, select = self.compiler.klass_info, self.compiler.select
            fields = klass_info["select_fields"]
            self.start, self.end = fields[0], fields[-1] + 1
            self.model = klass_info["model"]
            self.init_list = [column[0].target.attname for column in select[self.start:self.end]]
            # Django 5.2's signature (the stubs follow a later Django that adds `fetch_mode`).
            self.populators = get_related_populators(klass_info, select, self.db)  # type: ignore[call-arg]
            self.annotations = dict(self.compiler.annotation_col_map or {})

    def run(self, arguments: tuple[Any, ...]) -> list[Any]:
        if self.locks and not transaction.get_connection(self.db).in_atomic_block:
            raise transaction.TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = list(self.params)
        for position, argument in self.slots:
            params[position] = _adapted(self.kinds[argument], arguments[argument], self.db)
        with connections[self.db].cursor() as cursor:
            cursor.execute(self.sql, params)
            fetched = cursor.fetchall()
        rows = self.compiler.results_iter(results=[fetched], tuple_expected=self.iterable is not ModelIterable)
        if self.iterable is FlatValuesListIterable:
            return [row[0] for row in rows]
        if self.iterable is ValuesListIterable:
            return [tuple(row) for row in rows]
        found = []
        for row in rows:
            obj = self.model.from_db(self.db, self.init_list, row[self.start:self.end])
            for populator in self.populators:
                populator.populate(row, obj)
            for name, position in self.annotations.items():
                setattr(obj, name, row[position])
            found.append(obj)
        return found


C = TypeVar("C")


class _PerVendor(Generic[C]):
    """What `compile(alias)` makes, made once per connection alias and vendor (thread-safe)."""

    def __init__(self, compile: Callable[[str], C]) -> None:
        self._compile = compile
        self._made: dict[tuple[str, str], C] = {}
        self._lock = threading.Lock()

    def __call__(self, alias: str) -> C:
        key = (alias, connections[alias].vendor)
        made = self._made.get(key)
        if made is None:
            with self._lock:
                made = self._made.get(key)
                if made is None:
                    made = self._made[key] = self._compile(alias)
        return made


class Prepared(Generic[T]):
    """`Prepared(lambda run_id: Run.objects.filter(pk=run_id), int)`, then `.all(7)` or
    `.first(7)`: the queryset that `build` returns for the call's arguments, compiled once.

    `build` must give the same shape for any arguments (no branching on them); `kinds` are
    the arguments' types (int or str)."""

    def __init__(self, build: Callable[..., QuerySet[Any]], *kinds: type) -> None:
        self.build = build
        self.kinds = kinds
        self._for: _PerVendor[_Compiled] = _PerVendor(self._compile)

    def _compile(self, alias: str) -> _Compiled:
        markers = tuple(_marker(kind) for kind in self.kinds)
        return _Compiled(self.build(*markers), markers, self.kinds)

    def all(self, *arguments: Any, using: str = "default") -> list[T]:
        _checked(arguments, self.kinds)
        if _out_of_range(arguments):
            return []
        return self._for(using).run(arguments)

    def first(self, *arguments: Any, using: str = "default") -> T | None:
        """The first row (the shape should order and slice itself: `[:1]`)."""
        found = self.all(*arguments, using=using)
        return found[0] if found else None


class PreparedUpdate:
    """`PreparedUpdate(lambda run_id, owner, now: (Run.objects.filter(pk=run_id), {"owner":
    owner, "heartbeat_at": now}), int, str, datetime)`, then `.run(7, "w1", now)`: the
    queryset's `update(**values)` compiled once (per connection's vendor), run with each
    call's arguments; returns the number of rows changed, as `update` does.

    For an UPDATE whose WHERE the ORM compiles in more Python than the database takes to
    run it (a lease's compare-and-set with its subqueries: about 3.5 ms of compiling for a
    statement SQLite runs in 0.2). Refused: a shape that updates related models or whose
    WHERE needs rows read first (joins the backend cannot update through)."""

    def __init__(self, build: Callable[..., tuple[QuerySet[Any], dict[str, Any]]], *kinds: type) -> None:
        self.build = build
        self.kinds = kinds
        self._for: _PerVendor[tuple[str, list[Any], list[tuple[int, int]]]] = _PerVendor(self._compile)

    def _compile(self, alias: str) -> tuple[str, list[Any], list[tuple[int, int]]]:
        markers = tuple(_marker(kind) for kind in self.kinds)
        queryset, values = self.build(*markers)
        query: Any = queryset.query.chain(UpdateQuery)
        query.add_update_values(values)
        if query.related_updates:
            raise ValueError("Prepared: an update of related models cannot be prepared")
        compiler = query.get_compiler(using=alias)
        # What `execute_sql` does first: an UPDATE through joins becomes `pk IN (…)`, or reads
        # the ids first where the backend cannot select from the table it updates.
        compiler.pre_sql_setup()
        if query.related_ids is not None:
            raise ValueError("Prepared: an update whose rows are read first cannot be prepared")
        sql, params = compiler.as_sql()
        if not sql:
            raise ValueError("Prepared: the update has nothing to set")
        params = list(params)
        return sql, params, _slots(params, markers, self.kinds, alias)

    def run(self, *arguments: Any, using: str = "default") -> int:
        _checked(arguments, self.kinds)
        if _out_of_range(arguments):
            return 0
        sql, compiled, slots = self._for(using)
        params = list(compiled)
        for position, argument in slots:
            params[position] = _adapted(self.kinds[argument], arguments[argument], using)
        with transaction.mark_for_rollback_on_error(using), connections[using].cursor() as cursor:
            cursor.execute(sql, params)
            return int(cursor.rowcount)
