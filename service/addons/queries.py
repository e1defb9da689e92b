"""Read SQL of integrations: the read model `addons` and the delivery tables beside it."""

from __future__ import annotations

NEXT_ADDON_ID = "SELECT nextval('addon_ids')"
_ADDON = """
SELECT id, provider, description, enabled, parameters::text AS parameters,
       sealed::text AS sealed, events, projects, environments, created_at
FROM addons
"""
LIST_ADDONS = _ADDON + "ORDER BY id"
GET_ADDON = _ADDON + "WHERE id = $1"
# A change to an integration locks its row first: changes queue, each sees the one before.
LOCK_ADDON = _ADDON + "WHERE id = $1 FOR UPDATE"
ENABLED_ADDON_IDS = "SELECT id FROM addons WHERE enabled ORDER BY id"
# An integration's deliveries, newest first (Unleash's integration events).
DELIVERIES = """
SELECT id, addon_id, position, attempt, state, state_details, details::text AS details,
       created_at
FROM addon_deliveries WHERE addon_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3
"""
# What delivery kept of an integration goes with it: its checkpoint and its deliveries.
FORGET_DELIVERIES = """
WITH gone AS (DELETE FROM addon_deliveries WHERE addon_id = $1)
DELETE FROM addon_checkpoints WHERE addon_id = $1
"""
