from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0002_step_lifecycle_and_agent_state'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='options',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
