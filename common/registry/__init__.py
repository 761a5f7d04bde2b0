"""The download registry: fetch upstream data by key or group, verified, never half-written.

Every upstream file, dataset and checkpoint is a ``[[source]]`` entry of ``common/registry/sources.toml`` or a
paper's ``sources.toml`` (``common.plugins``). ``fetch`` turns an entry into a local path under the data root: already
there and verified (pinned sha256, or the hash recorded on first use in ``<data root>/checksums.lock.json``), else
copied from ``VLC_MIRROR``, else downloaded; only a verified file is moved into place, so nothing partial or
unverified ever appears at the destination. Zip archives are extracted beside it (members that would escape it
refused), Hugging Face entries are snapshots, and manual entries say exactly what a person has to do.

One module per concern (docs/layout.md lists them), and this file imports none of them: a stage that only looks a key
up depends on ``sources`` and ``errors``, not on the HTTP, archive or hub code.
"""
