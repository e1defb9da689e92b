"""Users: accounts of people, their passwords and sign-in sessions."""
