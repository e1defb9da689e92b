"""API tokens: their commands, decisions, handlers and queries (people, service accounts and
their personal access tokens are in service/users)."""
