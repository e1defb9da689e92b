"""Project insight: health, lead time to production (exact, from the log's times), insights."""
