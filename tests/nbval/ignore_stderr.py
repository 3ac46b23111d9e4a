"""nbval plugin for labkit's notebooks: stderr is noise, not output.

Libraries write progress bars, warnings and llama.cpp load logs to stderr, and their wording
changes between versions and machines. What a notebook *teaches* is in stdout and rich outputs,
so stderr streams are left out of nbval's comparison (on both sides); everything else is compared.

It lives with the tests, out of the folder learners browse, and is loaded by name with the other
nbval options (the Makefile's ``NBVAL``):

    python -m pytest notebooks/07_local_inference.ipynb --nbval --nbval-current-env \
        --nbval-sanitize-with tests/nbval/sanitize.cfg -p tests.nbval.ignore_stderr
"""

from __future__ import annotations

from nbval.plugin import IPyNbCell

_compare = IPyNbCell.compare_outputs


def _without_stderr(outputs):
    return [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]


def _compare_without_stderr(self, test, ref, skip_compare=None):
    return _compare(self, _without_stderr(test), _without_stderr(ref), skip_compare)


IPyNbCell.compare_outputs = _compare_without_stderr
