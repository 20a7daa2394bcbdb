"""HIPIFY assessment: how much of a CUDA tree hipify-perl converts, and what it cannot.

Two engines produce the same findings:

- ``fast`` (:mod:`stack.hipify.fast`): one pass per file driven by the tables
  extracted at run time from the *installed* hipify-perl script
  (:mod:`stack.hipify.tables`), reproducing its matching semantics exactly,
  including the quirks (substring matches, ``pos()`` carried between table
  entries, hash iteration order). Hundreds of times faster than the tool's own
  warning pass, which tries every table identifier as a separate regex on
  every line.
- ``hipify-perl`` (:mod:`stack.hipify.examine`): runs the real tool with
  ``-examine`` and parses what it prints. The reference the tests hold the
  fast engine to.

:mod:`stack.hipify.scan` walks a tree, caches per-file findings by content hash
(:mod:`stack.hipify.cache`), shards the work across cores and sums it up;
:mod:`stack.hipify.report` writes the Markdown report. The findings shape is
described in docs/hipify.md.

Everything here is stdlib-only and imports nothing heavy at module level: it
runs inside minimal job containers.
"""
