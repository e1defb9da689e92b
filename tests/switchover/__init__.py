"""The switch from a running Unleash (issue 44): the importer's tests, and the proof machinery
(seed.py fills a server through its admin API, compare.py compares two servers, proof.py runs
`make import-compare`)."""
