"""Favourites: the flags and projects a person marks, per person."""
