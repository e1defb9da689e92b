"""Integrations (Unleash's addons): the providers, their requests, their deliveries."""
