-- Keys of personal data (service/privacy, docs/privacy.md). One row a person: their data key,
-- wrapped (AES-256-GCM) by the master key whose fingerprint is beside it. Outside the log, and
-- the only table whose rows are destroyed on purpose: erasing a person sets `wrapped` to null,
-- which makes every value sealed with it unreadable, in the log and in every copy of it.
-- A row without a key and with `erased_at` is a tombstone: whatever is written of that person
-- afterwards reads "[erased]" at once.
CREATE TABLE personal_keys (
    person_id     bigint PRIMARY KEY,
    master_key_id text,
    wrapped       bytea,
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- Erase when due (ERASURE_DELAY_DAYS after the person was deleted); null: not asked.
    erase_after   timestamptz,
    erased_at     timestamptz,
    CONSTRAINT personal_keys_wrapped_by CHECK ((wrapped IS NULL) = (master_key_id IS NULL)),
    CONSTRAINT personal_keys_erased_without_key CHECK (erased_at IS NULL OR wrapped IS NULL)
);

-- The background job's question: whose erasure is due (SKIP LOCKED across replicas).
CREATE INDEX personal_keys_due ON personal_keys (erase_after)
    WHERE erased_at IS NULL AND erase_after IS NOT NULL;

-- Nobody but the service reads keys: not the reporting role, not PUBLIC.
REVOKE ALL ON personal_keys FROM PUBLIC;
