"""The launch's inputs: the ``run`` command's options and what they become for one start of the
CLI (its command line, allow-listed environment and prompt), the MCP file, extra arguments, and
the run's private state directory.

Imports: ``agent.contain``, ``agent.guards`` and the shared top-level modules.
"""
