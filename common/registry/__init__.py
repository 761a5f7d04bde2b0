"""The download registry: fetch upstream data by key or group, verified, never half-written.

Every upstream file, dataset and checkpoint is a ``[[source]]`` entry of the registry: ``common/registry/sources.toml``
(the shared entries, and those two or more papers use) or a paper's ``papers/<paper>/sources.toml``; a key is looked
up in the shared file first, then in its owner paper's (``common.plugins``).
``fetch`` turns an entry into a local path under the data root (``VLC_DATA``):

* already there and verified -> returned without work (pinned sha256, or the hash recorded on first use);
* else copied from a local mirror (``VLC_MIRROR``: URLs laid out without their scheme), else downloaded;
* bytes go to a temporary file beside the destination, are hashed, and only a verified file is moved into
  place with ``os.replace``; on any failure the temporary file is deleted, so nothing partial or unverified
  ever appears at the destination;
* entries without a published sha256 are trusted on first use: the observed hash is recorded in
  ``<data root>/checksums.lock.json`` and every later fetch (or file found in place) is checked against it;
* zip archives are extracted into a temporary sibling folder (refusing members that would escape it) and
  renamed into place, with a marker recording the archive's sha256;
* Hugging Face entries go through ``huggingface_hub.snapshot_download``; manual entries explain exactly what
  a person has to do and accept the file once it is in place (a folder once it holds a file: an empty one is an
  unfinished step, never "verified").

Errors are exceptions whose messages name the entry, the source tried and what to do next. A ``VLC_MIRROR`` (or
``--mirror``) that is not a folder is a ``SettingError`` naming it, raised when the mirror is first needed. ``fetch``
on the command line checks every name first (an unknown one lists the close keys and groups), prints each failure's
details (a manual source's steps) and ends with one ``error:`` line naming every failed target.

One module per concern (docs/layout.md lists them), and this file imports none of them: a DVC stage's code deps are
its import closure (``python -m common deps``), so a stage that only looks a key up depends on ``sources`` and
``errors``, not on the HTTP, archive or hub code.
"""
