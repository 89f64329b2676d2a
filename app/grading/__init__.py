"""Grading: the plugin contract, the registry, the strategies, and the service that runs them."""
