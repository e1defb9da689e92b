"""Personal data in stored events: sealed with a key per person, erased by destroying the key
(crypto-shredding). docs/privacy.md is the account of it."""
