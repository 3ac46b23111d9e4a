#!/bin/bash
# Record the dialog comparison on generated users (labkit generate-users) in resumable stretches of 6 users, in
# one fixed random order of the split's user names (seed 42), so a recording stopped anywhere holds a random
# sample of every scenario and trait. Run it again to go on: finished rows are kept (--resume).
#
# usage: scripts/record_dialog_users.sh MODEL ARMS USERS_DIR SPLIT OUT [STOP_AT [COMPARE_FLAG...]]
#   STOP_AT: a time `date -d` reads; no stretch starts after it (empty or absent: record every user)
#   COMPARE_FLAG: passed on to `labkit compare dialog`, e.g. --reuse DIR for an ablation beside `machine`
# env:   PYTHON (default .venv/bin/python), THREADS (default 2), LOCK (default /tmp/labkit-live.lock: one
#        llama.cpp process at a time), FIRST (default all: only the first FIRST users of the fixed order)
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=$1 ARMS=$2 USERS=$3 SPLIT=$4 OUT=$5
STOP=$(date -d "${6:-9999-12-31}" +%s)
shift $(( $# < 6 ? $# : 6 ))
PY=${PYTHON:-.venv/bin/python}
mapfile -t IDS < <("$PY" - "$USERS" "$SPLIT" <<'PYEOF'
import random
import sys
from pathlib import Path

from labkit.dialog.users import load_user_scripts

names = sorted(u.name for u in load_user_scripts(Path(sys.argv[1])) if u.split == sys.argv[2])
random.Random(42).shuffle(names)
print("\n".join(names))
PYEOF
)
N=${FIRST:-${#IDS[@]}}
echo "${#IDS[@]} $SPLIT users in $USERS, recording the first $N of them"
for ((i = 0; i < N; i += 6)); do
  if (( $(date +%s) > STOP )); then echo "stopped at $(date): the next stretch starts at user $i"; exit 0; fi
  chunk=$(IFS=,; echo "${IDS[*]:i:$(( N - i < 6 ? N - i : 6 ))}")
  echo "== users $i-$(( i + 5 < N - 1 ? i + 5 : N - 1 )) of $N: $chunk ($(date))"
  flock "${LOCK:-/tmp/labkit-live.lock}" "$PY" -m labkit compare dialog --model "$MODEL" --threads "${THREADS:-2}" \
    --tasks "$USERS" --split "$SPLIT" --arms "$ARMS" --out "$OUT" --resume --only "$chunk" "$@" --quiet
done
