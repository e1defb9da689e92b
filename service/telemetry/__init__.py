"""What SDKs report: their registration and their flag evaluations (telemetry, not events)."""
