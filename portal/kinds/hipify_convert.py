"""hipify-convert on the pages: a porting step a project page starts with one click, and
its diff shown in the job page (unified, a page of files at a time)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from portal.kinds.base import Presenter, ProjectStep
from stack.kinds.hipify_convert import KIND

if TYPE_CHECKING:
    from django.http import HttpRequest

    from jobs.models import Job

DIFF_ARTIFACT = "hipify.diff"
FILES_PER_PAGE = 10
MAX_LINES_PER_FILE = 2000  # more of one file: the download has it
MAX_DIFF_BYTES = 64 * 1024 * 1024  # a larger diff is only a download


def split_diff(text: str) -> list[dict[str, Any]]:
    """The files of a git-style unified diff: path, and its lines with their kind."""
    files: list[dict[str, Any]] = []
    for line in text.splitlines():
        if line.startswith("diff --git "):
            path = line.split(" b/", 1)[-1] if " b/" in line else line[11:]
            files.append({"path": path, "lines": [], "added": 0, "removed": 0, "cut": 0})
            continue
        if not files:
            continue
        f = files[-1]
        if line.startswith(("+++", "---")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind, f["added"] = "add", f["added"] + 1
        elif line.startswith("-"):
            kind, f["removed"] = "del", f["removed"] + 1
        else:
            kind = "ctx"
        if len(f["lines"]) < MAX_LINES_PER_FILE:
            f["lines"].append((kind, line))
        else:
            f["cut"] += 1
    return files


class ConvertPresenter(Presenter):
    partial = "portal/kinds/hipify_convert.html"

    def context(self, job: Job, request: HttpRequest | None = None) -> dict[str, Any]:
        """A page of the diff's files (``?diff_page=``), or why there is none to show."""
        from django.core.paginator import Paginator

        from jobs.services import artifact_file

        artifact = job.artifacts.filter(path=DIFF_ARTIFACT).first()
        if artifact is None:
            return {"diff": None}
        try:
            path = artifact_file(artifact)
            if path.stat().st_size > MAX_DIFF_BYTES:
                return {"diff": None, "diff_artifact": artifact, "diff_too_big": True}
            text = path.read_bytes().decode("latin-1")
        except (OSError, ValueError):
            return {"diff": None, "diff_artifact": artifact, "diff_gone": True}
        page = Paginator(split_diff(text), FILES_PER_PAGE).get_page(request.GET.get("diff_page"))
        return {"diff": page, "diff_artifact": artifact}


PRESENTER = ConvertPresenter(KIND, step=ProjectStep(label="Convert to HIP", order=2))
