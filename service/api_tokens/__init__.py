"""Accounts: API tokens now; users, service accounts and personal access tokens later."""
