"""hipify-scan on the pages: the first porting step of a project (its results are the
porting report's)."""

from __future__ import annotations

from portal.kinds.base import Presenter, ProjectStep
from stack.kinds.hipify_scan import KIND

PRESENTER = Presenter(KIND, step=ProjectStep(label="Scan with HIPIFY", order=1))
