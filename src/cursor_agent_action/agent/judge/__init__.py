"""Judging the run: whether to start the agent again, the CLI's known failures, what the box
said, the checked patch and ``files-changed``, the structured answer, and the one verdict.

Imports: ``agent.launch``, ``agent.contain``, ``agent.guards``, ``stream``, ``stream.render``
(the structured answer's state file) and the shared top-level modules.
"""
