"""``labkit compare dialog``: arms × scripted users on the one runner (:mod:`labkit.compare.runs`).

A job is one arm talking to one scripted user (seed 0: greedy): the user's messages go to the arm's bot, the
event log is written as it goes (``logs/<arm>/<user>.jsonl``) and the conversation is scored
(:mod:`labkit.dialog.measure`). The runner gives ``runs.jsonl``, cassettes, resume, progress and several servers;
a conversation stopped half-way runs again from its first message. ``dialog.json`` names the model, arms, split
and users; ``arm_names: "content"`` marks :mod:`labkit.dialog.arms` names (else :mod:`labkit.dialog.history`'s).
``--only`` records some users; a later ``--resume`` adds the rest or more arms, paired on the same users.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from labkit.compare.command import row_differences
from labkit.compare.runs import Answers, Comparison, Job, Outcome, Row, provenance, read_rows, run_jobs
from labkit.core.errors import LabkitError
from labkit.core.provenance import REPO
from labkit.core.store import JsonlLog, read_jsonl, write_atomic
from labkit.dialog.arms import Arm
from labkit.dialog.arms import arm as declared_arm
from labkit.dialog.measure import score
from labkit.dialog.scenario import Scenario
from labkit.dialog.simulate import load_scenarios, run_user
from labkit.dialog.users import UserScript, check_users, load_user_scripts
from labkit.llm.backend import Backend

CONFIG_FILE = "dialog.json"
# what a replay may change in a row: nothing (a conversation carries no times)
ROW_FIELDS = ("arm", "task", "seed", "split", "passed", "user", "scenario", "end_step", "variables",
              "user_messages", "calls", "reasks", "contract_violations", "failures", "prompt_tokens", "parts",
              "misses", "false_completion", "cancelled", "legacy_misses")


def repo_relative(path: Path) -> str:
    """A folder as a recording stores it: relative to the repository where it lies inside it."""
    resolved = Path(path).resolve()
    return resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else str(resolved)


def repo_path(stored: str) -> Path:
    """A folder a recording names, found again (relative to the repository where it was inside it)."""
    path = Path(stored)
    return path if path.is_absolute() else REPO / path


@dataclass(frozen=True)
class DialogConfig:
    """What a dialog recording ran: the model, the arms, the split, and the users and scenarios read."""

    model: str
    arms: tuple[str, ...]
    split: str | None = None
    scenarios: str = "data/dialog"
    users_dir: str = "data/dialog/users"
    arm_names: str = "content"  # "content": labkit.dialog.arms; "rounds": as recorded (labkit.dialog.history)

    def __post_init__(self) -> None:
        if self.arm_names not in ("content", "rounds"):
            raise LabkitError(f"arm_names {self.arm_names!r} is neither 'content' nor 'rounds'",
                              "restore dialog.json from git, or drop the field (the design rounds' names).")

    def arm(self, name: str) -> Arm:
        """The arm ``name`` of this recording, by the names it was recorded under."""
        if self.arm_names == "rounds":
            from labkit.dialog.history import recorded_arm

            return recorded_arm(name)
        return declared_arm(name)

    def to_dict(self, users: Iterable[str]) -> dict[str, Any]:
        data = {"comparison": "dialog", **asdict(self), "arms": list(self.arms), "users": sorted(users)}
        if self.arm_names == "rounds":  # written as the recordings under the old names were
            del data["arm_names"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DialogConfig:
        return cls(model=data["model"], arms=tuple(data["arms"]), split=data.get("split"),
                   scenarios=data["scenarios"], users_dir=data["users_dir"],
                   arm_names=data.get("arm_names", "rounds"))


class DialogComparison(Comparison):
    """Arms × users as :mod:`labkit.compare.runs` reads them; ``only`` keeps some users' jobs for this stretch."""

    config_file = CONFIG_FILE

    def __init__(self, settings: DialogConfig, only: Iterable[str] | None = None,
                 pairs: Iterable[tuple[str, str]] | None = None) -> None:
        for name in settings.arms:
            settings.arm(name)
        self.settings = settings
        self.scenarios: dict[str, Scenario] = load_scenarios(repo_path(settings.scenarios))
        self.users: list[UserScript] = load_user_scripts(repo_path(settings.users_dir), split=settings.split)
        if not self.users:
            raise LabkitError(f"no user scripts in {settings.users_dir}"
                              + (f" for the split {settings.split}" if settings.split else ""),
                              "point --users at a folder of user scripts (data/dialog/users).")
        check_users(self.users, self.scenarios)
        wanted = None if only is None else set(only)
        if wanted is not None:
            known = {u.name for u in self.users} | {u.name.split("_")[0] for u in self.users}
            unknown = sorted(wanted - known)
            if unknown:
                raise LabkitError(f"--only names no user of this recording: {', '.join(unknown)}",
                                  "give user script names or their prefixes (a01,s03), of the split recorded.")
        self._only = wanted
        self._pairs = None if pairs is None else set(pairs)  # (arm, user): a replay runs what was recorded
        self._by_name = {u.name: u for u in self.users}

    def config(self) -> dict[str, Any]:
        return self.settings.to_dict(u.name for u in self.users)

    def accepts(self, recorded: dict[str, Any]) -> bool:
        """The same configuration, or the same with more arms (an arm recorded later pairs on the same users)."""
        config = self.config()
        return recorded == config or ({**recorded, "arms": config["arms"]} == config
                                      and set(recorded.get("arms", [])) <= set(config["arms"]))

    def _wanted(self, user: UserScript) -> bool:
        return self._only is None or user.name in self._only or user.name.split("_")[0] in self._only

    def jobs(self) -> list[Job]:
        return [Job(arm, user.name, 0, user.split or "") for arm in self.settings.arms for user in self.users
                if self._wanted(user) and (self._pairs is None or (arm, user.name) in self._pairs)]

    def row_job(self, row: Row) -> Job:
        return Job(row["arm"], row["task"], 0, row["split"])

    def cassette(self, folder: Path, job: Job) -> Path:
        return folder / "cassettes" / f"{job.arm}.jsonl"

    def run(self, job: Job, backend: Backend | None, folder: Path) -> Outcome:
        assert backend is not None
        user = self._by_name[job.task]
        scenario = self.scenarios[user.scenario]
        path = log_path(folder, job.arm, user.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # a conversation stopped half-way runs again from its first message
        bot = self.settings.arm(job.arm).make(scenario, backend, log=JsonlLog(path), clock=lambda: 0.0)
        result = run_user(bot, user, job.arm)
        scored = score(bot.events, scenario, user, job.arm)
        counts = {k: v for k, v in result.to_dict().items() if k not in ("misses", "adhered")}
        row = {"arm": job.arm, "task": user.name, "seed": 0, "split": job.split, "passed": scored.adhered,
               **counts, "parts": scored.parts, "misses": scored.misses,
               "false_completion": scored.false_completion, "cancelled": scored.cancelled,
               "legacy_misses": list(result.misses),  # the first recording's substring check, for comparison
               "cached_tokens": bot.state.cached_tokens}  # prompt tokens read from a kept prefix (0: no cache)
        verdict = "; ".join(scored.misses) or "adhered"
        return Outcome(row, scored.adhered, f"end {result.end_step}, calls {result.calls}/{result.user_messages}: "
                       f"{verdict[:160]}")


def log_path(folder: Path, arm: str, user: str) -> Path:
    """Where a recorded conversation's events are: ``logs/<arm>/<user>.jsonl``."""
    return folder / "logs" / arm / f"{user}.jsonl"


def read_config(folder: Path) -> DialogConfig:
    """The configuration a dialog recording in ``folder`` ran (a clear error if it is not one)."""
    path = Path(folder) / CONFIG_FILE
    if not path.exists():
        raise LabkitError(f"{folder} is not a dialog recording ({path} is missing)",
                          "pass a folder written by `labkit compare dialog --out`.")
    try:
        return DialogConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise LabkitError(f"{path} is damaged ({type(exc).__name__}: {exc})", "restore it from git.") from None


def record(settings: DialogConfig, answers: Answers, out: Path, *, only: Iterable[str] | None = None,
           resume: bool = False, describe: dict[str, Any] | None = None, mode: str = "live",
           progress: Callable[[str], None] | None = None, pairs: Iterable[tuple[str, str]] | None = None) -> list[Row]:
    """Run every conversation not yet in ``out/runs.jsonl`` (of the ``only`` users, if given); all rows.

    Each stretch appends its provenance (commit, machine, backend, the jobs it had left) to
    ``out/provenance.jsonl``, so a recording made in several stretches says where each came from.
    """
    comparison = DialogComparison(settings, only, pairs)
    if resume and not (out / CONFIG_FILE).exists():
        raise LabkitError(f"nothing to resume in {out}: {out / CONFIG_FILE} is missing",
                          "start the recording without --resume.")
    if not resume and (out / "runs.jsonl").exists():
        raise LabkitError(f"{out} already holds a recording",
                          "add --resume to continue it (more users or arms), or give a new --out.")
    kept = read_rows(out / "runs.jsonl") if resume else []
    done = {comparison.row_job(r).key() for r in kept}
    todo = [j for j in comparison.jobs() if j.key() not in done]
    out.mkdir(parents=True, exist_ok=True)
    if mode == "live":
        with (out / "provenance.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({**provenance(describe or answers.describe(), mode, out, model=settings.model,
                                                  arms=list(settings.arms), only=sorted(only or [])),
                                     "jobs_left": len(todo)}, sort_keys=True) + "\n")
    if progress is not None:
        progress(f"{len(comparison.jobs())} conversation(s) asked for, {len(comparison.jobs()) - len(todo)} already "
                 f"in {out / 'runs.jsonl'}, {len(todo)} to do")
    rows = run_jobs(comparison, answers, out, resume=resume, progress=progress)
    # one order for every recording, however it was made in stretches: arms as configured, users by name
    arms = {arm: i for i, arm in enumerate(settings.arms)}
    rows = sorted(rows, key=lambda r: (arms.get(r["arm"], len(arms)), r["task"]))
    write_atomic(out / "runs.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return rows


def replay(folder: Path, out: Path, *, progress: Callable[[str], None] | None = None) -> list[str]:
    """Re-run every recorded conversation of ``folder`` from its cassettes into ``out``; the differences."""
    settings = read_config(folder)
    recorded = read_rows(folder / "runs.jsonl")
    if not recorded:
        raise LabkitError(f"{folder / 'runs.jsonl'} holds no conversations", "replay a folder with recorded runs.")
    started = time.perf_counter()
    rows = record(settings, Answers(replay=folder), out, mode="replay", progress=progress,
                  pairs=[(r["arm"], r["task"]) for r in recorded])
    problems = row_differences([{k: r.get(k) for k in ROW_FIELDS} for r in recorded],
                               [{k: r.get(k) for k in ROW_FIELDS} for r in rows], key=lambda r: (r["arm"], r["task"]))
    for row in recorded:
        mine, theirs = log_path(folder, row["arm"], row["task"]), log_path(out, row["arm"], row["task"])
        if mine.exists() and theirs.exists() and read_jsonl(mine).events != read_jsonl(theirs).events:
            problems.append(f"{row['arm']} {row['task']}: the event log differs from {mine}")
    if progress is not None:
        progress(f"replayed {len(rows)} conversation(s) in {time.perf_counter() - started:.1f} s")
    return problems


__all__ = ["CONFIG_FILE", "DialogComparison", "DialogConfig", "log_path", "read_config", "record", "replay",
           "repo_path", "repo_relative"]
