"""The small-model comparison (``labkit compare reading``): its one version lives in :mod:`labkit.experiment.v2`.

The package keeps the ``v2`` name because the recordings (``data/experiment-v2/``), the task files
(``data/tasks/v2/``) and notebook 06 all say v2.
"""
