"""The renderers: the live log (:mod:`.livelog`), the job summary (:mod:`.summary`), the
network wall's section of it and its output (:mod:`.wallsection`) and the run's one report to
the runner (:mod:`.report`: outputs, summary, annotation). They only read finished results.

Imports: ``stream`` and the shared top-level modules.
"""
