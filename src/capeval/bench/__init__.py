"""capeval.bench."""
