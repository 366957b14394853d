"""Scans that find the constructs of a page, one module per markup. Each over-approximates:
it finds a construct wherever a reader might see one (any indentation, inside any container,
after escapes are removed), so what it misses is nothing a reader acts on.
"""
