"""The agent wing: everything that runs the Cursor CLI, from its install to the run's verdict.

``run`` at the top orchestrates one ``run`` step; each concern is a subpackage:

- :mod:`.launch`: the run's inputs, turned into the CLI's command line, environment and state;
- :mod:`.install`: installing the pinned CLI and checking what was downloaded;
- :mod:`.guards`: the permission policy and the files the agent must not change for good;
- :mod:`.contain`: where the agent's process runs (the box, the Landlock tier, uncontained);
- :mod:`.judge`: what the run's end means: the verdict, the checked patch, the answer.

Imports: ``agent.launch``, ``agent.guards``, ``agent.contain``, ``agent.judge``, ``stream``,
``stream.engine``, ``stream.render`` and the shared top-level modules (installing the CLI is a
command of its own).
"""
