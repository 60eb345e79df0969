"""capeval.pregen."""
