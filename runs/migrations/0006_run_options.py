from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0005_run_hibernated_at'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='options',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
