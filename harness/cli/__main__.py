"""``python -m harness.cli`` runs the ``harness`` command."""

from harness.cli import main

main()
