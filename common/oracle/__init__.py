"""The authors' code as the oracle (``python -m common oracle [PAPER...]``, ``make oracle``; docs/audit.md, "The
authors' code as the oracle"): ``core`` (what a run reports), ``authors`` (their files fetched and run), ``observe``
(their functions' values recorded unmodified), ``run`` (the command, each paper in its own process).

A paper takes part with ``papers/<paper>/oracle.py`` defining ``run(ctx: OracleContext) -> PaperOracle``.
"""
