"""Installing the Cursor CLI: the pinned version and its known SHA-256s, the download with
retries, the archive unpacked safely, the tool-cache layout and the ``install`` command.

Imports: the shared top-level modules only.
"""
