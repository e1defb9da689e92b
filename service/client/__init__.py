"""The client API: what Unleash's SDKs read (flags to evaluate, by polling or streaming)."""
