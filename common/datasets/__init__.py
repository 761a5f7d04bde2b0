"""Dataset builders: each turns a benchmark's released files into task-shape records (``common.tasks``)."""
