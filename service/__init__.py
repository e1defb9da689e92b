"""Event-sourced feature-flag administration service speaking the Unleash admin API."""
