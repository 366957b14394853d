"""Containment: where the agent's process runs and how it is stopped.

:mod:`.isolation` is the one entry that picks the tier (the box, as root or in a user namespace
of the runner's user; Landlock; uncontained);
:mod:`.probe` tries the box's kernel operations first; :mod:`.sandbox` gives both running tiers
one interface that :mod:`.process` drives; :mod:`.box` is the box's root side and network wall,
:mod:`.lockdown` and :mod:`.landlock` the Landlock tier; :mod:`.cancel` turns a cancelled job
into an event.

Imports: ``stream`` (the wall's report, the line cap) and the shared top-level modules.
"""
