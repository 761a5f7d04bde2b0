"""The DVC pipeline as the code sees it (docs/layout.md lists the modules)."""
