"""Shared library of the vision-language compositionality reproducibility workspace.

Task shapes (``common.tasks``), one scoring engine (``common.engine``), the model zoo
(``common.zoo``), the download registry (``common.registry``), the offline mini world
(``common.miniworld``) and the audit of published numbers (``common.published``, ``common.audit``).
"""

__version__ = "0.1.0"
