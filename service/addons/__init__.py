<<<<<<< HEAD
"""Integrations (Unleash's addons): the providers, their requests, their deliveries."""
=======
"""Integrations (Unleash's addons): what they are, where they may send, how they deliver."""
>>>>>>> i45-network
