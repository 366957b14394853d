"""Run the Cursor CLI headless in GitHub Actions, safely."""

__version__ = "1.0.0.dev0"
