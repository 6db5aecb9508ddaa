"""File conventions every layer shares, below all of them (it imports no other kifunet package).

``atomic``: write a file so that a reader sees the old one or the whole new one, on a local disk (a temporary
beside it, flushed to disk, renamed onto it) or on an object store (``gs://...``: one upload).
"""
