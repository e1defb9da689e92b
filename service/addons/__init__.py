"""Integrations (Unleash's addons): providers and their requests, the configuration, and
delivery from the log."""
