"""The full profile, rehearsed end to end: every paper's full pipeline run by DVC on stand-ins, in a copy of the
workspace that never mixes with real data or committed results (``python -m tests.rehearsal [PAPER...]``,
``make rehearse [PAPER=...]``; ``run`` says how, step by step).

* ``workspace``: the copy (``build/rehearsal/ws``, git-ignored; own data root, checksum lock, caches and results);
* ``params``: its ``params.yaml`` (``profile: full``, ``full_inputs.cap``, the counts the stand-ins hold, a few steps
  per fine-tune, CPU, fp32, two processes). The stages and the oracles read only those production parameters and the
  copy's registry, where the stand-ins' md5s are stated (``standins.state_md5s``): this package is test code, and no
  production module imports it (an import-linter contract);
* ``standins``: the inputs in their upstream formats where the downloader puts them (pinned files are never
  stood in for: they come real from ``VLC_MIRROR``); each paper's own in ``papers/<paper>.py``
  (``papers.StandIns`` says what such a module holds);
* ``models`` and ``archs``: the zoo's models as real, shrunk architectures at random init, where and how each release
  is read.

Every number a rehearsal makes is a stand-in's: its audits mark them ``rehearsal: not comparable``
(``common.audit.core.REHEARSAL``), as they mark every number from capped inputs (``full_inputs.cap``).
"""
