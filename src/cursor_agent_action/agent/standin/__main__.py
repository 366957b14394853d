"""``python -m cursor_agent_action.agent.standin --scenario FILE [cursor-agent args...]``."""

import sys

from cursor_agent_action.agent.standin import main

sys.exit(main())
