"""``python -m cursor_agent_action.standin --scenario FILE [cursor-agent args...]``."""

import sys

from cursor_agent_action.standin import main

sys.exit(main())
