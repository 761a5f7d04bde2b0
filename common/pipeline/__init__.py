"""The DVC pipeline as the code sees it: ``params.yaml`` (``params``, ``inputs``), the stage map and each stage's
code deps (``stage_map``, ``stage_deps``, ``import_closure``), DVC as a subprocess (``dvc_run``), ``data.dvc``
(``data_dvc``), the tables stages' shared opening (``profile_stage``), and the machine and settings a number was
computed under (``reproducible``, ``machine``, ``disk``).
"""
