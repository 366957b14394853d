"""Shared pytest configuration. Reusable helpers live in ``tests/support/``."""
