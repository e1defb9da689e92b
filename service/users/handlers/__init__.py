"""HTTP handlers of accounts: one module per route group."""
