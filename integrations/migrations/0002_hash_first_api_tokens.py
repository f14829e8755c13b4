"""The first API's tokens were stored in plain text (rest_framework.authtoken): keep each one
working as a full-scope token, stored only as its SHA-256, and delete the plain text."""

import hashlib

from django.db import migrations

# The scopes at the time of this migration (a token of the first API could do everything).
ALL_SCOPES = ["read", "runs:write", "approvals:decide", "hooks", "webhooks:manage"]


def hash_tokens(apps, schema_editor):
    Token = apps.get_model("authtoken", "Token")
    ApiToken = apps.get_model("integrations", "ApiToken")
    for token in Token.objects.all():
        ApiToken.objects.get_or_create(
            key_hash=hashlib.sha256(token.key.encode()).hexdigest(),
            defaults={"user_id": token.user_id, "name": "first-API token", "prefix": token.key[:8],
                      "scopes": ALL_SCOPES, "legacy": True},
        )
    Token.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("integrations", "0001_initial"),
        ("authtoken", "0004_alter_tokenproxy_options"),
    ]

    operations = [migrations.RunPython(hash_tokens, migrations.RunPython.noop)]
