"""The reading comparison: task families where reading matters, a held-out split, paired statistics.

Run by ``labkit compare reading`` and notebook 06 on the one runner (:mod:`labkit.compare.runs`);
``labkit bench equality`` and ``labkit bench experiment`` replay and re-run its prompts."""
