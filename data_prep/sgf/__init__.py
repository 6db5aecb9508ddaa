"""Game records in: SGF text, its character sets, and the files, directories and archives that hold it.

================  ================================================================================
module            what it holds
================  ================================================================================
``sgf_io``        one SGF record -> a ``GameRecord`` (sgfmill; GoGoD/KGS/Fox metadata)
``inputs``        which records a build reads: files, directories, archives, in a fixed order
================  ================================================================================
"""
