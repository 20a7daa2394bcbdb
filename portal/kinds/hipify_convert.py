"""hipify-convert on the pages: a porting step a project page starts with one click."""

from __future__ import annotations

from portal.kinds.base import Presenter, ProjectStep
from stack.kinds.hipify_convert import KIND

PRESENTER = Presenter(KIND, step=ProjectStep(label="Convert to HIP", order=2))
