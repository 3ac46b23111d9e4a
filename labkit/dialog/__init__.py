"""Dialog scripts as state machines: a YAML scenario owns the script, the model answers one step at a time.

:func:`load_scenario` compiles a scenario into a checked table; :class:`DialogBot` runs it (four-field contract,
one corrective re-ask, variables with history); :class:`PromptOnlyBot` is the whole script in one prompt.
Features and arms: :mod:`~labkit.dialog.features`, :mod:`~labkit.dialog.arms` (older recordings' names:
:mod:`~labkit.dialog.history`); ``labkit compare dialog``: :mod:`~labkit.dialog.comparison`. :func:`run_user` plays
one scripted conversation (:func:`summarize`: the legacy check); :func:`score`, :func:`summarize_scores`,
:func:`compare_arms` and :func:`score_runs` are the five-part measure (:mod:`~labkit.dialog.measure`, floor bots in
:mod:`~labkit.dialog.floors`); :func:`conversation_view` / :class:`ChatViewer` the chat viewer with system logs.
"""

from labkit.compare.stats import wilson_interval
from labkit.dialog.contract import Answer, Checked, Violation, answer_schema, check_answer, reask_prompt
from labkit.dialog.engine import DialogBot, PromptOnlyBot, TurnOutcome, current_step
from labkit.dialog.events import (
           BotSaid,
           ContractFailed,
           DialogState,
           ModelCalled,
           UserSaid,
           VariableChanged,
           reduce_dialog,
)
from labkit.dialog.measure import Score, compare_arms, false_completions, score, summarize_scores
from labkit.dialog.rescore import score_recording, score_runs
from labkit.dialog.scenario import Scenario, ScenarioError, Step, load_scenario, parse_scenario
from labkit.dialog.simulate import UserScript, adherence, load_user_script, load_user_scripts, run_user, summarize
from labkit.dialog.viewer import ChatViewer, TurnView, conversation_view, render_html, render_text

__all__ = ["Answer", "BotSaid", "ChatViewer", "Checked", "ContractFailed", "DialogBot", "DialogState", "ModelCalled",
           "PromptOnlyBot", "Scenario", "ScenarioError", "Score", "Step", "TurnOutcome", "TurnView", "UserSaid",
           "UserScript", "VariableChanged", "Violation", "adherence", "answer_schema", "check_answer",
           "compare_arms", "conversation_view", "current_step", "false_completions", "load_scenario",
           "load_user_script", "load_user_scripts", "parse_scenario", "reask_prompt", "reduce_dialog", "render_html",
           "render_text", "run_user", "score", "score_recording", "score_runs", "summarize", "summarize_scores",
           "wilson_interval"]
