"""The guards on files and policy: the permission presets and floor, the CLI's own sandbox
settings, the configuration the CLI reads from the repository, and the files captured before a
run and put back after it.

Imports: the shared top-level modules only.
"""
