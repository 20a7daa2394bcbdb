"""Typed readers of environment variables.

Settings come from the environment so one image runs everywhere; a bad value
must stop the process at start-up with a message naming the variable, not
surface later as a confusing runtime error. Secrets may be given as
``NAME_FILE`` (a path, as Docker and Kubernetes secrets are mounted) instead
of ``NAME``.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str) -> str | None:
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={file_name!r} cannot be read: {exc}") from exc
    return os.environ.get(name)


def env_str(name: str, default: str | None = None) -> str | None:
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """An integer setting; ``maximum`` refuses what the host cannot give (a cap above it is a
    typo or a copied config, and would let one job take the machine)."""
    value = _raw(name)
    if value is None or value.strip() == "":
        return default if maximum is None else min(default, maximum)
    try:
        number = int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from exc
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} must be at least {minimum}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name}={number} is more than this host has ({maximum})")
    return number


def host_cpus() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    return len(os.sched_getaffinity(0)) or 1


def host_memory_mb() -> int:
    """Physical memory in MiB, read once at start-up for the caps derived from it."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024)


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_int_list(name: str) -> list[int] | None:
    """A comma-separated list of non-negative integers; None when unset or empty."""
    items = env_list(name, [])
    if not items:
        return None
    # The messages quote the items already read: reading again would re-open a _FILE secret.
    shown = ",".join(items)
    try:
        numbers = [int(item) for item in items]
    except ValueError:
        raise ImproperlyConfigured(
            f"{name}={shown!r} is not a comma-separated list of integers"
        ) from None
    if any(n < 0 for n in numbers):
        raise ImproperlyConfigured(f"{name}={shown!r}: indices must not be negative")
    return numbers


def env_map(name: str) -> dict[str, str]:
    """Comma-separated ``key=value`` pairs; empty when unset.

    An entry without ``=`` (or with an empty side) is a typo, and dropping it
    would quietly run jobs with the wrong setting, so it stops the start-up.
    """
    pairs = {}
    for item in env_list(name, []):
        key, sep, value = item.partition("=")
        if not (sep and key.strip() and value.strip()):
            raise ImproperlyConfigured(f"{name}: {item!r} is not of the form key=value")
        pairs[key.strip()] = value.strip()
    return pairs


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = _raw(name)
    if value is None or value == "":
        return default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {', '.join(choices)}")
    return value
