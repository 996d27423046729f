"""``python -m mb_sim.cli``: the ``mb-sim`` command."""
import sys

from mb_sim.cli import main

sys.exit(main())
