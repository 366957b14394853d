"""The GitHub wing: the deterministic follow-up commands that hold a token (``publish``,
``comment``, ``review``, ``ci-context``, ``pr-context``, ``gate``), the API client they share,
and the bodies they post. :mod:`.review` and :mod:`.publish` hold the commands with several
modules of their own.

Imports: ``agent.guards`` (the gate reads the presets), ``stream``, ``stream.engine``,
``stream.render`` (the bodies render a transcript's report) and the shared top-level modules.
"""
