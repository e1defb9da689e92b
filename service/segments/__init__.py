"""Segments: named constraint sets shared by strategies."""
