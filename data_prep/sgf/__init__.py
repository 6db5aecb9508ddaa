"""Game records in: SGF text, its character sets, and the files, directories and archives that hold it.

* ``charsets``: an SGF file's bytes -> text: the codec chosen (``CA``, UTF-8, ranked fallbacks)
* ``game_trees``: a collection cut into one byte string per game tree
* ``sgf_io``: one SGF record -> a ``GameRecord`` (sgfmill; main line, metadata, named errors)
* ``sources``: ``Source`` (one record candidate), ``InputInfo`` (one input), the size caps
* ``archives``: tar and zip archives read in place as bounded streams, archives inside archives
* ``inputs``: which records a build reads: files, directories, archives, in a fixed order

Imports run ``charsets`` <- ``game_trees`` <- ``sources`` <- ``archives`` <- ``inputs``; ``sgf_io`` uses
``charsets`` and re-exports ``decode_sgf`` and ``split_game_trees``.
"""
