"""`python -m accelgraph_cli` runs the accelgraph CLI."""

from .cli.app import main

raise SystemExit(main())
