"""``review``: the agent's findings checked, placed on the pull request's diff lines, posted as
one review, and the commit status a branch rule can require.

Imports: ``gh`` and the shared top-level modules.
"""
