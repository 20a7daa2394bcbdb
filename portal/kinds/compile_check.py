"""compile-check on the pages: a porting step whose button names the architectures it
compiles for (the kind takes them from the project: ``Kind.project_defaults``)."""

from __future__ import annotations

from portal.kinds.base import Presenter, ProjectStep
from stack.kinds.compile_check import KIND

PRESENTER = Presenter(KIND, step=ProjectStep(label="Compile check", order=3))
