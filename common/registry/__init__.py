"""The download registry: fetch upstream data by key or group, verified, never half-written.

Every upstream file, dataset and checkpoint is a ``[[source]]`` entry of ``common/registry/sources.toml`` or a
paper's ``sources.toml`` (``common.plugins``); ``fetch`` moves only a verified file into place (pinned sha256, or the
hash recorded on first use in ``<data root>/checksums.lock.json``), from ``VLC_MIRROR`` or the network.

One module per concern (docs/layout.md lists them), and this file imports none of them: a stage that only looks a key
up depends on ``sources`` and ``errors``, not on the HTTP, archive or hub code.
"""
