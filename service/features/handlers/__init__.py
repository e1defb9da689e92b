"""HTTP handlers of flags, their configuration and segments: one module per route group."""
