"""Environments become immutable: identified by the hash of all they store (data_sha256).

Existing rows get their hash here. Until now a row's data was overwritten by whichever job
ran last on the same fingerprint, so the data each row holds now is the last one written;
the earlier jobs' own data is gone and cannot be recovered. Rows whose hash comes out the
same are merged: jobs and measurements move to the oldest, the others are deleted.
The constraints come in 0006, a transaction of their own: PostgreSQL will not alter a table
with the deferred foreign-key checks of these updates still pending.
"""

import hashlib
import json

from django.db import migrations, models


def _digest(data, image, image_digest):
    # The same as jobs.services.environment_digest, copied: a migration must not change
    # when the code does.
    canonical = json.dumps(
        {"data": data, "image": image, "image_digest": image_digest},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def hash_rows(apps, schema_editor):
    Environment = apps.get_model("jobs", "Environment")
    Job = apps.get_model("jobs", "Job")
    Measurement = apps.get_model("jobs", "Measurement")
    kept: dict[str, int] = {}
    for env in Environment.objects.order_by("first_seen_at", "pk").iterator():
        digest = _digest(env.data, env.image, env.image_digest)
        if digest in kept:
            Job.objects.filter(environment_id=env.pk).update(environment_id=kept[digest])
            Measurement.objects.filter(environment_id=env.pk).update(environment_id=kept[digest])
            env.delete()
            continue
        kept[digest] = env.pk
        Environment.objects.filter(pk=env.pk).update(data_sha256=digest)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0004_gpu_lease"),
    ]

    operations = [
        migrations.AddField(
            model_name="environment",
            name="data_sha256",
            field=models.CharField(max_length=64, null=True),
        ),
        migrations.RunPython(hash_rows, migrations.RunPython.noop),
    ]
