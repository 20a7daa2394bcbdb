"""Lets ``python -m stack ...`` run the CLI."""

import sys

from stack.cli import main

sys.exit(main())
