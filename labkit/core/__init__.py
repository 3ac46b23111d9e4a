"""The core every machine is built on: tables, the machine, events, the log, replay, the sandbox.

Nothing here imports from a package above it (compare, course, doctor or the machines)."""
