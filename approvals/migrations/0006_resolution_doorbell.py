"""On PostgreSQL, an approval leaving `pending` rings its run's doorbell inside the database.

A trigger calls `pg_notify('gatehouse_doorbell', run_id)` when an approval's status moves
from pending to anything else (decided, expired, cancelled, superseded — whatever wrote
it). PostgreSQL delivers a notification only when its transaction commits, and drops it on
rollback: the doorbell rings exactly when the decision is there to read, with no round trip
of its own and no channel-layer hop between the web process and the worker
(`infra/pg_doorbell.py` listens). On SQLite this migration does nothing.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

CHANNEL = "gatehouse_doorbell"  # infra/pg_doorbell.py listens on it


def _table(apps: Any, schema_editor: Any) -> str:
    return str(schema_editor.quote_name(apps.get_model("approvals", "Approval")._meta.db_table))


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        "CREATE OR REPLACE FUNCTION gatehouse_approval_resolved() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN PERFORM pg_notify('{CHANNEL}', NEW.run_id::text); RETURN NULL; END $$"
    )
    schema_editor.execute(
        f"CREATE TRIGGER gatehouse_approval_resolved AFTER UPDATE OF status ON {_table(apps, schema_editor)} "
        "FOR EACH ROW WHEN (OLD.status = 'pending' AND NEW.status <> 'pending') "
        "EXECUTE FUNCTION gatehouse_approval_resolved()"
    )


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"DROP TRIGGER IF EXISTS gatehouse_approval_resolved ON {_table(apps, schema_editor)}")
    schema_editor.execute("DROP FUNCTION IF EXISTS gatehouse_approval_resolved()")


class Migration(migrations.Migration):
    dependencies = [("approvals", "0005_policy_presets")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
