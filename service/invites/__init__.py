"""Invite links (Unleash's public signup tokens): made by admins, used by new people to sign
up on the public routes `/invite/{token}/...`."""
