"""Strategy types (`/api/admin/strategies`): the built-in ones and custom ones."""
