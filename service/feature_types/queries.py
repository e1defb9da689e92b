"""Read SQL of the feature type read model."""

from __future__ import annotations

_FEATURE_TYPE = "SELECT id, name, description, lifetime_days FROM feature_types"
ALL_FEATURE_TYPES = _FEATURE_TYPE + " ORDER BY sort_order, id"
FEATURE_TYPE = _FEATURE_TYPE + " WHERE id = $1"
# Changes of one type's lifetime queue on its row.
LOCK_LIFETIME = "SELECT lifetime_days FROM feature_types WHERE id = $1 FOR UPDATE"
