"""The papers this workspace reproduces, one package each (``papers/<paper>/``).

A paper's package holds everything about that paper: its data preparation, one script per table or figure
(each a DVC stage in its ``dvc.yaml``), the recomputation of its numbers from the authors' released files,
its audit stage, its command-line subcommands and its registry entries (``sources.toml``, ``models.toml``).
``common`` finds these through the ``PAPER`` each package exports (``common.paper.Paper``: its audit, report, card,
oracle and subcommands); adding a paper edits no file in ``common/``.
Papers may import each other where one reuses another's benchmark (never copy it).
"""
