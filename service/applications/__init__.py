"""Applications: what SDKs report of each (telemetry) beside what people say of it (events)."""
