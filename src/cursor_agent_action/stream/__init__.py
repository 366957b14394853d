"""The stream wing, the core: the CLI's ``stream-json`` bytes into events, the events into one
read-only result, the result into one run report. :mod:`.render` turns that report into the live
log, the job summary and the step outputs; nothing here imports the agent or GitHub wings.

Imports: the shared top-level modules only (the engine's own rule is in :mod:`.engine`).
"""
