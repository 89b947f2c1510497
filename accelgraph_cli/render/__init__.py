"""Rich rendering for the terminal: graph models, diffs, capture/replay/smoke results."""
