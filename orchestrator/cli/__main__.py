"""`python -m orchestrator.cli`: the same as the `infersweep` command."""

from orchestrator.cli import main

main()
