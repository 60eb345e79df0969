"""capeval.meta."""
