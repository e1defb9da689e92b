"""The personal dashboard: a person's flags and projects, and a project's latest events."""
