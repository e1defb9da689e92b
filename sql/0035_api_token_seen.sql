-- When each API token last authenticated a request (events ApiTokensSeen, batched per replica;
-- ApiTokenCreated.seen_at for an imported token): the token list's `seenAt`. NULL: never.
ALTER TABLE readmodel.api_tokens ADD COLUMN seen_at timestamptz;
