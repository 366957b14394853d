"""The renderers: the live log, the job summary, the network wall's report and the run's one
report to the runner (outputs, summary, annotation). They only read finished results.

Imports: ``stream`` and the shared top-level modules.
"""
