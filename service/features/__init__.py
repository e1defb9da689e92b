"""Feature flags."""
