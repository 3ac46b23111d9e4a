#!/bin/bash
# Record the code comparison on pypi:seeded's test split in resumable stretches of 3 tasks each, in one fixed
# random order of the task ids (seed 42), so a recording stopped anywhere holds a random sample of every test
# package. Run it again to go on: finished rows are kept (--resume).
#
# usage: scripts/record_pypi_seeded.sh MODEL ARMS OUT [STOP_AT [COMPARE_FLAG...]]
#   STOP_AT: a time `date -d` reads; no stretch starts after it (empty or absent: record every task)
#   COMPARE_FLAG: passed on to `labkit compare code`, e.g. --reuse DIR for the best-of and ablation arms
# env:   PYTHON (default .venv/bin/python), THREADS (default 2), LOCK (default /tmp/labkit-live.lock: one
#        llama.cpp process at a time), FIRST (default all: record only the first FIRST tasks of the fixed order,
#        a random sample declared before the run, for arms too costly for the whole split)
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=$1 ARMS=$2 OUT=$3
STOP=$(date -d "${4:-9999-12-31}" +%s)
shift $(( $# < 4 ? $# : 4 ))
PY=${PYTHON:-.venv/bin/python}
mapfile -t IDS < <("$PY" - <<'PYEOF'
import random
from pathlib import Path

from labkit.repoedit.pypi_seeded import tasks_file
from labkit.repoedit.tasks import load_tasks

ids = sorted(load_tasks(Path(tasks_file("pypi:seeded:test"))))
random.Random(42).shuffle(ids)
print("\n".join(ids))
PYEOF
)
N=${FIRST:-${#IDS[@]}}
echo "${#IDS[@]} test tasks, recording the first $N of them"
for ((i = 0; i < N; i += 3)); do
  if (( $(date +%s) > STOP )); then echo "stopped at $(date): the next stretch starts at task $i"; exit 0; fi
  chunk=$(IFS=,; echo "${IDS[*]:i:$(( N - i < 3 ? N - i : 3 ))}")
  echo "== tasks $i-$(( i + 2 < N - 1 ? i + 2 : N - 1 )) of ${#IDS[@]}: $chunk ($(date))"
  flock "${LOCK:-/tmp/labkit-live.lock}" "$PY" -m labkit compare code --model "$MODEL" --threads "${THREADS:-2}" \
    --tasks pypi:seeded:test --split test --arms "$ARMS" --out "$OUT" --resume --only "$chunk" "$@"
done
