"""Projects and environments."""
