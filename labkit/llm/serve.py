"""``python -m labkit.llm.serve --model FILE.gguf ...``: llama.cpp's OpenAI-compatible server, loaded safely.

It is ``python -m llama_cpp.server`` (same arguments, same API) with one difference: the model is
loaded by this machine's :class:`labkit.llm.native.LoadPlan`, so on a CPU with AMX the server does
not take the weight-repack route that crashes on the first request (see :mod:`labkit.llm.native`).
"""

from __future__ import annotations

import sys

from labkit.llm.native import apply_plan_process_wide


def main() -> None:
    plan = apply_plan_process_wide()
    print(f"labkit.llm.serve: {plan.label} — {plan.reason}", file=sys.stderr, flush=True)
    from llama_cpp.server.__main__ import main as llama_cpp_server_main

    llama_cpp_server_main()


if __name__ == "__main__":
    main()
