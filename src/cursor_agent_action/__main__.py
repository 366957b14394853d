"""``python -m cursor_agent_action``."""

import sys

from cursor_agent_action.cli import main

sys.exit(main(sys.argv[1:]))
