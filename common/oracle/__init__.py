"""The authors' code as the oracle (``python -m common oracle [PAPER...]``, ``make oracle``).

Each paper's official evaluation, fetched byte-exact through the downloader (registry group ``authors-code``: the
pinned commits, mirror or internet), is run unmodified on the inputs this workspace's full profile read (the
rehearsal's stand-ins in CI, the real files on a user's machine) with the same weights, and its numbers and
per-example decisions are set beside this workspace's (``results/<paper>/full``). Only model construction may be
replaced (a hub download becomes the local checkpoint, loaded by the authors' own loader where one exists); every
replacement, and every environment shim the released code needs to run today, is listed in the output.

* ``core``: what an oracle run reports (``Number``, ``Decisions``, ``Replacement``, ``PaperOracle``) and its table.
* ``authors``: the authors' files fetched into their upstream layout, and run (``run_script``: their ``__main__``).
* ``observe``: the return values and locals of one of their functions, recorded without touching their code.
* ``run``: the command; each paper in its own process (ARO's and hard positives' ``dataset_zoo`` share a name).

A paper takes part with ``papers/<paper>/oracle.py`` defining ``run(ctx: OracleContext) -> PaperOracle``.
"""
