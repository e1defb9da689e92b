"""Tests of integrations (Unleash's addons): providers, receivers' rules, the API, delivery."""
