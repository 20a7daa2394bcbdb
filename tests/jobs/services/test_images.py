"""Which image runs a kind: the operator's per-kind choice, then the kind's own, then ours."""

from __future__ import annotations

import dataclasses

from jobs.services import image_for
from stack.kinds import KINDS


def test_a_kind_without_an_image_of_its_own_runs_in_the_servers_image(settings):
    settings.ROCPATH_IMAGE = "rocpath/debian:latest"
    settings.ROCPATH_KIND_IMAGES = {}
    assert image_for("noop") == "rocpath/debian:latest"


def test_a_kinds_own_default_image_comes_before_the_servers(settings, monkeypatch):
    settings.ROCPATH_IMAGE = "rocpath/debian:latest"
    settings.ROCPATH_KIND_IMAGES = {}
    own = dataclasses.replace(KINDS["blas-bench"], default_image="rocpath/rocm-pytorch:7")
    monkeypatch.setitem(KINDS, "blas-bench", own)
    assert image_for("blas-bench") == "rocpath/rocm-pytorch:7"


def test_the_operators_per_kind_image_comes_first(settings, monkeypatch):
    settings.ROCPATH_KIND_IMAGES = {"blas-bench": "site/blas:2"}
    own = dataclasses.replace(KINDS["blas-bench"], default_image="rocpath/rocm-pytorch:7")
    monkeypatch.setitem(KINDS, "blas-bench", own)
    assert image_for("blas-bench") == "site/blas:2"
