"""Integrations: the providers' definitions and the requests they send (pure)."""
