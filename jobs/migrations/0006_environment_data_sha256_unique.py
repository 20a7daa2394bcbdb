"""Environments: data_sha256 (filled by 0005) identifies a row; fingerprint is no longer unique
(rows of one machine and stack share it), and last_seen_at goes (rows never change)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0005_environment_immutable"),
    ]

    operations = [
        migrations.AlterField(
            model_name="environment",
            name="data_sha256",
            field=models.CharField(max_length=64, unique=True),
        ),
        migrations.AlterField(
            model_name="environment",
            name="fingerprint",
            field=models.CharField(db_index=True, max_length=64),
        ),
        migrations.RemoveField(
            model_name="environment",
            name="last_seen_at",
        ),
        migrations.AlterModelOptions(
            name="environment",
            options={"ordering": ["-first_seen_at", "-id"]},
        ),
    ]
