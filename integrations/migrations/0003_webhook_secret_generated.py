"""Whether Gatehouse generated an endpoint's signing secret: only then is its prefix shown.
Endpoints registered before this was recorded count as generated when the secret has the
exact shape `new_secret()` makes (`whsec_` + 43 URL-safe characters); any other is custom."""

import re

from django.db import migrations, models

GENERATED = re.compile(r"whsec_[A-Za-z0-9_-]{43}")


def mark_generated(apps, schema_editor):
    WebhookEndpoint = apps.get_model("integrations", "WebhookEndpoint")
    ids = [pk for pk, secret in WebhookEndpoint.objects.values_list("pk", "secret") if GENERATED.fullmatch(secret)]
    WebhookEndpoint.objects.filter(pk__in=ids).update(secret_generated=True)


class Migration(migrations.Migration):
    dependencies = [("integrations", "0002_hash_first_api_tokens")]

    operations = [
        migrations.AddField(
            model_name="webhookendpoint",
            name="secret_generated",
            field=models.BooleanField(default=False, editable=False),
        ),
        migrations.RunPython(mark_generated, migrations.RunPython.noop),
    ]
