"""Tag types and the tags that exist as values of one (the vocabulary flags are tagged with)."""
