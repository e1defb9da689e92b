"""`python -m service import-unleash`: a running Unleash's state (or its export file) written
into this service's log as the ordinary events a person's requests make, then compared.

- `source`: Unleash's admin API as the importer reads it (version and rights checked first).
- `run`: the run itself: kinds in order, each in a transaction of its own (or, for
  `--dry-run`, all in one that is rolled back), progress and the report.
- `origin`: what an earlier run from the same source wrote, read from the log.
- `kinds`: the kinds in the order they are written.
- One module a kind of entity (`tag_types`, ...): read the source, read ours under locks,
  decide with the domain's own functions, append. Each decodes Unleash's answers in lenient
  Structs of its own (a fourth contract: another server's responses, never stored as they are).
- `report`, `progress`: what the command prints.
"""
