from __future__ import annotations

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_throttles() -> None:
    """Throttle history lives in the cache: each test starts with none."""
    cache.clear()
