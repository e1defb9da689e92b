"""Read models built from the event log: one module per read model, and the machinery that
applies them (inline, follower, rebuild, replay, verify); `registry` lists them."""
