"""``publish``: the agent's patch re-checked against the allow-list, applied and committed (by
hardened git or GitHub's signed API), pushed to a bot branch and opened as a pull request.

Imports: ``gh``, ``agent.launch`` (the run's state directory), ``agent.guards`` (lint reads
the presets) and the shared top-level modules.
"""
