"""Developer tools (not part of the service)."""
