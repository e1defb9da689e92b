"""Flags exported to and imported from a file in Unleash's features-batch format
(docs/behavior.md, "Export and import")."""
