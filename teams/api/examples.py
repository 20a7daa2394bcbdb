"""Examples of the teams API's requests and answers, for the OpenAPI schema (Swagger UI)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample

WHEN = "2026-12-01T09:30:00Z"


def _page(row: dict[str, Any]) -> dict[str, Any]:
    """One row of a list's page: drf-spectacular wraps it in the pagination's answer."""
    return row


def _answer(name: str, value: Any) -> OpenApiExample:
    return OpenApiExample(name, value=value, response_only=True)


TEAM: dict[str, Any] = {"id": 3, "name": "GPU lab", "slug": "gpu-lab"}
PROJECT: dict[str, Any] = {
    "id": 11,
    "team": "gpu-lab",
    "name": "cfd-solver",
    "codebase_description": "A CUDA finite-volume solver, 40k lines of C++ and CUDA.",
    "current_platform": "CUDA 12 on A100",
    "target_gpus": ["MI300X", "gfx942"],
    "created_at": WHEN,
}
SOURCE: dict[str, Any] = {
    "id": 5,
    "project": 11,
    "origin": "git",
    "status": "pending",
    "name": "https://example.org/lab/cfd-solver.git",
    "ref": "main",
    "commit": "",
    "archive_sha256": "",
    "file_count": 0,
    "total_bytes": 0,
    "error": "",
    "created_at": WHEN,
}

TEAMS = _answer("your teams", _page(TEAM))
TEAM_EXAMPLE = _answer("a team", TEAM)
PROJECTS = _answer("your teams' projects", _page(PROJECT))
PROJECT_EXAMPLE = _answer("a project", PROJECT)
PROJECT_CREATE = OpenApiExample(
    "a CUDA code to port",
    value={
        "team": "gpu-lab",
        "name": "cfd-solver",
        "codebase_description": PROJECT["codebase_description"],
        "current_platform": PROJECT["current_platform"],
        "target_gpus": PROJECT["target_gpus"],
    },
    request_only=True,
)
SOURCES = _answer("a project's sources", _page({**SOURCE, "status": "ready", "file_count": 812}))
SOURCE_CREATE = OpenApiExample(
    "a git repository",
    value={"git_url": SOURCE["name"], "ref": "main"},
    request_only=True,
    description="Or a multipart form with ``archive`` (.tar.gz, .tgz or .zip).",
)
SOURCE_EXAMPLE = _answer("the new source, being cloned", SOURCE)
