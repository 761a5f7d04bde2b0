"""The workspace's records and files (docs/layout.md lists the modules). Imports nothing above ``common.errors``, so
every layer reads and writes through it.
"""
