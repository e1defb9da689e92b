"""Integrations (Unleash's addons): what they are, where they may send, how they deliver."""
