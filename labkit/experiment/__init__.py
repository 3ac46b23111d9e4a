"""The small-model comparison (``labkit compare reading``): its one version lives in :mod:`labkit.experiment.v2`.

The package keeps the ``v2`` name because the recordings (``data/experiment-v2/``), the task files
(``data/tasks/v2/``) and notebook 06 all say v2. The first comparison (one compare family, six arms) was
retired with its recording: on its tasks a one-line rule in the machine scored
as well as the model, which is what made v2's task families necessary; its prompts were also what
``labkit bench equality`` replayed, which now replays v2's.
"""
