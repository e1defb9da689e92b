"""The flag table: `GET /api/admin/search/features`, Unleash's search of flags."""
