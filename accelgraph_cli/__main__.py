"""`python -m accelgraph_cli` runs the accelgraph CLI."""

from .cli import main

raise SystemExit(main())
