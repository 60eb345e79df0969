"""capeval.learn."""
