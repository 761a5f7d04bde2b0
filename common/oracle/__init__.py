"""The authors' code as the oracle (``python -m common oracle [PAPER...]``, ``make oracle``).

Each paper's official evaluation, byte-exact at the pinned commits, run unmodified on the inputs this workspace's
full profile read, its numbers and per-example decisions set beside this workspace's (docs/audit.md, "The authors'
code as the oracle"). Only model construction may be replaced; every replacement and shim is listed in the output.

* ``core``: what an oracle run reports (``Number``, ``Decisions``, ``Replacement``, ``PaperOracle``) and its table.
* ``authors``: the authors' files fetched into their upstream layout, and run (``run_script``: their ``__main__``).
* ``observe``: the return values and locals of one of their functions, recorded without touching their code.
* ``run``: the command; each paper in its own process (ARO's and hard positives' ``dataset_zoo`` share a name).

A paper takes part with ``papers/<paper>/oracle.py`` defining ``run(ctx: OracleContext) -> PaperOracle``.
"""
