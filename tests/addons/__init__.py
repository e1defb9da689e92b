"""Tests of integrations (Unleash's addons)."""
