"""The comparison, version 2: task families where reading matters, a held-out split, paired statistics.

Run by ``labkit compare reading`` and notebook 06 on the one runner (:mod:`labkit.compare.runs`);
``labkit bench equality`` and ``labkit bench experiment`` replay and re-run its prompts. Tasks:
``taskfile`` (format), ``generate`` (seeded dev/test splits), ``families`` (drafts and the one
verifier), ``world`` (tools and runtime task). Arms: ``arms`` (the seven declarations), ``prompts``,
``answers`` (one parser), ``rules``, ``choosers``, ``machine``, ``free`` and ``free_log``, ``events``.
Running and reading: ``runner``, ``report``, ``view``, ``speed``, ``cli``. Statistics are in
:mod:`labkit.compare.stats`.
"""
