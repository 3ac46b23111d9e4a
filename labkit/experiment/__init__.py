"""The small-model comparison (``labkit compare reading``), in :mod:`labkit.experiment.v2` (the name its
recordings, task files and notebook 06 use)."""
