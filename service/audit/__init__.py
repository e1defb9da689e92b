"""Audit: the event log over HTTP (Unleash's event API), the state at a past instant, diffs."""
