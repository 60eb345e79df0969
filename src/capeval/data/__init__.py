"""capeval.data."""
