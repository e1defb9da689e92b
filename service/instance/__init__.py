"""The instance's own settings and figures: maintenance mode (the admin API refuses changes
while it is on), the frontend API's CORS origins, the usage statistics, the telemetry settings."""
