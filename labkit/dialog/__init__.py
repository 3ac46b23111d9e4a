"""Dialog scripts as state machines: a YAML scenario owns the script, the model answers one step at a time.

- :func:`load_scenario` — a YAML scenario (instructions in Markdown files) compiled into a checked table;
- :class:`DialogBot` — the engine (four-field contract, one corrective re-ask, variables with history);
- :class:`PromptOnlyBot` — the comparison: the whole script in one prompt (``checked``: its claimed moves
  held to the script's moves and ``needs``);
- :mod:`labkit.dialog.features` — the machine's switchable features, each declared once with what it does and
  the hooks it acts in;
- :mod:`labkit.dialog.arms` — the arms ``labkit compare dialog --arms`` runs, named by content: ``machine``,
  ``bare_machine``, ``prompt_only``, ``prompt_only_checked`` and ``machine_without_<feature>``;
- :mod:`labkit.dialog.history` — the arms committed recordings name (the design rounds), to read them;
- :mod:`labkit.dialog.comparison` — ``labkit compare dialog``: arms × scripted users on the one runner
  (:mod:`labkit.compare.runs`), recorded, resumed, replayed;
- :func:`run_user` / :func:`summarize` — one scripted conversation, and the first recording's legacy check;
- :func:`score` / :func:`summarize_scores` / :func:`compare_arms` — the five-part measure a do-nothing bot cannot
  pass (:mod:`labkit.dialog.measure`); :func:`score_runs` re-scores recordings from their logs;
  :mod:`labkit.dialog.floors` holds the floor bots;
- :func:`conversation_view` / :class:`ChatViewer` — the chat-style viewer with expandable system logs.
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
