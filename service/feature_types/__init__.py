"""Feature types: the kinds of flag, each with the lifetime after which its flags are
potentially stale."""
