"""``python -m mycelium.cli``: the ``mycelium`` command where its script is not installed."""

from . import main

main()
