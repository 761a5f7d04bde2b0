"""Shared library of the vision-language compositionality reproducibility workspace.

Task shapes (``common.files.tasks``), one scoring engine (``common.evaluation.engine``), the model zoo
(``common.zoo``), the download registry (``common.registry``), the offline mini world
(``common.miniworld``) and the audit of published numbers (``common.reporting.published``, ``common.audit``).
"""

__version__ = "0.1.0"
