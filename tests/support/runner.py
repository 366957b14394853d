"""The environment of a Runner that plays GitHub's runner (masks printed as it reads them)."""

RUNNER_ENV = {"GITHUB_ACTIONS": "true"}
