from __future__ import annotations

import os

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import (
    env_bool,
    env_choice,
    env_int,
    env_int_list,
    env_list,
    env_map,
    env_str,
    host_cpus,
    host_memory_mb,
)
from tests.manage_helpers import manage


def test_booleans_accept_the_usual_spellings_and_refuse_others(monkeypatch):
    for raw, value in [("1", True), ("yes", True), ("off", False), ("", False)]:
        monkeypatch.setenv("FLAG", raw)
        assert env_bool("FLAG") is value
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="FLAG='maybe' is not a boolean"):
        env_bool("FLAG")


def test_integers_fail_loudly_on_junk_and_below_their_minimum(monkeypatch):
    monkeypatch.setenv("N", "ten")
    with pytest.raises(ImproperlyConfigured, match="N='ten' is not an integer"):
        env_int("N", 1)
    monkeypatch.setenv("N", "0")
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("N", 1, minimum=1)


def test_integers_above_what_the_host_has_are_refused_and_defaults_are_clamped(monkeypatch):
    monkeypatch.setenv("N", "65536")
    with pytest.raises(ImproperlyConfigured, match="N=65536 is more than this host has"):
        env_int("N", 1, maximum=24000)
    monkeypatch.delenv("N")
    assert env_int("N", 8192, maximum=512) == 512


def test_host_capacity_is_what_this_process_can_use():
    assert host_cpus() == len(os.sched_getaffinity(0))
    assert 0 < host_memory_mb() < 1 << 30


def test_choices_name_the_allowed_values(monkeypatch):
    monkeypatch.setenv("MODE", "warp")
    with pytest.raises(ImproperlyConfigured, match="one of local, docker"):
        env_choice("MODE", "local", ("local", "docker"))


def test_secrets_can_come_from_a_file(monkeypatch, tmp_path):
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("API_KEY_FILE", str(secret))
    assert env_str("API_KEY") == "s3cret"
    monkeypatch.setenv("API_KEY_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="cannot be read"):
        env_str("API_KEY")


def test_lists_are_comma_separated(monkeypatch):
    monkeypatch.setenv("HOSTS", "a.example, b.example,,")
    assert env_list("HOSTS", []) == ["a.example", "b.example"]


def test_integer_lists_are_read_and_refused_by_the_variables_name(monkeypatch):
    monkeypatch.delenv("GPUS", raising=False)
    assert env_int_list("GPUS") is None
    for raw, value in [("0, 2,3", [0, 2, 3]), ("", None), (" , ", None)]:
        monkeypatch.setenv("GPUS", raw)
        assert env_int_list("GPUS") == value
    monkeypatch.setenv("GPUS", "0,one")
    with pytest.raises(ImproperlyConfigured, match="GPUS='0,one' is not a comma-separated list"):
        env_int_list("GPUS")
    monkeypatch.setenv("GPUS", "1,-2")
    with pytest.raises(ImproperlyConfigured, match="GPUS='1,-2': indices must not be negative"):
        env_int_list("GPUS")


def test_a_bad_integer_list_from_a_file_is_reported_without_reading_it_again(monkeypatch, tmp_path):
    import config.env

    secret = tmp_path / "gpus"
    secret.write_text("0,x\n")
    monkeypatch.setenv("GPUS_FILE", str(secret))
    reads = []
    real_raw = config.env._raw
    monkeypatch.setattr(config.env, "_raw", lambda name: reads.append(name) or real_raw(name))
    with pytest.raises(ImproperlyConfigured, match="GPUS='0,x'"):
        env_int_list("GPUS")
    assert reads == ["GPUS"]


def test_maps_are_key_value_pairs_and_a_pair_without_a_value_stops_start_up(monkeypatch):
    monkeypatch.delenv("IMAGES", raising=False)
    assert env_map("IMAGES") == {}
    monkeypatch.setenv("IMAGES", "blas-bench=rocpath/rocm-pytorch:latest, probe = a=b,")
    assert env_map("IMAGES") == {"blas-bench": "rocpath/rocm-pytorch:latest", "probe": "a=b"}
    for bad in ("blas-bench", "=rocpath/x", "probe="):
        monkeypatch.setenv("IMAGES", f"noop=rocpath/x,{bad}")
        with pytest.raises(ImproperlyConfigured, match=f"IMAGES: '{bad}' is not of the form"):
            env_map("IMAGES")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "DATABASE_URL",
            "CELERY_BROKER_URL",
            "SECRET_KEY",
            "DEBUG",
            "DJANGO_ALLOW_ASYNC_UNSAFE",
        }
    }
    env.update(extra)
    return env


@pytest.mark.process
def test_check_deploy_is_clean_under_production_settings(tmp_path):
    env = _clean_env(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        SECRET_KEY="a-long-random-production-key-" + "x" * 40,
        ALLOWED_HOSTS="rocpath.example.com",
        ROCPATH_VAR_DIR=str(tmp_path),
    )
    result = manage(env, "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr + result.stdout


@pytest.mark.process
def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    env = _clean_env(
        DJANGO_SETTINGS_MODULE="config.settings.production", ROCPATH_VAR_DIR=str(tmp_path)
    )
    result = manage(env, "check")
    assert result.returncode != 0 and "SECRET_KEY" in result.stderr


@pytest.mark.process
def test_a_bad_database_url_stops_start_up_with_its_name(tmp_path):
    env = _clean_env(DATABASE_URL="nosuchdb://x", ROCPATH_VAR_DIR=str(tmp_path))
    result = manage(env, "check")
    assert result.returncode != 0 and "DATABASE_URL" in result.stderr


@pytest.mark.process
def test_a_kind_image_without_an_image_stops_start_up_with_its_name(tmp_path):
    env = _clean_env(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        ROCPATH_VAR_DIR=str(tmp_path),
        ROCPATH_KIND_IMAGES="blas-bench=rocpath/rocm-pytorch:latest,probe",
    )
    result = manage(env, "check")
    assert result.returncode != 0 and "ROCPATH_KIND_IMAGES: 'probe'" in result.stderr


@pytest.mark.process
def test_an_alert_queue_shared_with_the_control_queue_stops_start_up(tmp_path):
    env = _clean_env(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        ROCPATH_VAR_DIR=str(tmp_path),
        ROCPATH_CONTROL_QUEUE="ops",
        ROCPATH_ALERT_QUEUE="ops",
    )
    result = manage(env, "check")
    assert result.returncode != 0 and "ROCPATH_ALERT_QUEUE='ops'" in result.stderr


@pytest.mark.process
@pytest.mark.parametrize("other", ["ROCPATH_QUEUE", "ROCPATH_CONTROL_QUEUE", "ROCPATH_ALERT_QUEUE"])
def test_a_compare_queue_shared_with_another_queue_stops_start_up(tmp_path, other):
    env = _clean_env(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        ROCPATH_VAR_DIR=str(tmp_path),
        ROCPATH_COMPARE_QUEUE="shared",
        **{other: "shared"},
    )
    result = manage(env, "check")
    assert result.returncode != 0 and "ROCPATH_COMPARE_QUEUE='shared'" in result.stderr


@pytest.mark.process
def test_the_comparison_cache_is_redis_with_cache_url_and_files_without(tmp_path):
    code = (
        "from django.conf import settings; c = settings.CACHES['results'];"
        "print(c['BACKEND'], c['LOCATION'], c.get('OPTIONS', {}).get('MAX_ENTRIES'))"
    )
    base = {"DJANGO_SETTINGS_MODULE": "config.settings.base", "ROCPATH_VAR_DIR": str(tmp_path)}
    embedded = manage(_clean_env(**base), "shell", "-c", code).stdout.splitlines()[-1].split()
    assert embedded == [
        "django.core.cache.backends.filebased.FileBasedCache",
        str(tmp_path / "cache" / "results"),
        "20000",
    ]
    shared = (
        manage(_clean_env(**base, CACHE_URL="redis://127.0.0.1:6379/3"), "shell", "-c", code)
        .stdout.splitlines()[-1]
        .split()
    )
    assert shared[:2] == ["django.core.cache.backends.redis.RedisCache", "redis://127.0.0.1:6379/3"]


@pytest.mark.process
def test_development_generates_a_secret_key_once_and_keeps_it(tmp_path):
    env = _clean_env(DJANGO_SETTINGS_MODULE="config.settings.base", ROCPATH_VAR_DIR=str(tmp_path))
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    first = manage(env, "shell", "-c", code).stdout.strip()
    second = manage(env, "shell", "-c", code).stdout.strip()
    assert len(first) > 40 and first == second
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


@pytest.mark.process
def test_migrations_match_the_models():
    env = _clean_env(DJANGO_SETTINGS_MODULE="config.settings.test")
    result = manage(env, "makemigrations", "--check", "--dry-run")
    assert result.returncode == 0, result.stdout
