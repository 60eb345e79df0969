"""capeval.cli."""
