"""Context fields (`/api/admin/context`): the built-in ones and custom ones."""
