-- What sql/0020 made unused: sql/0017's search function of seven arguments (no running release
-- calls it) and the two trigram indexes it read (issue 18).
--
-- Dropping an index takes its table's ACCESS EXCLUSIVE lock, which waits for every transaction
-- reading readmodel.users, and while it waits every new reader queues behind it: a reporting
-- query or a `verify` that runs for minutes would hold every user read (sign-ins, token checks,
-- searches) for as long. So each drop waits at most 100 ms for its lock, then lets the readers
-- through for 400 ms and tries again, for up to five minutes; after that the migration fails
-- (nothing is dropped) and must run again before this release starts (`serve --no-migrate`
-- refuses a schema behind it): the migration Job retries it within its deadline, or an operator
-- runs `migrate` once the long reader is gone (docs/operations.md). Once granted, the lock is
-- held for the drop and this transaction's commit only.

DROP FUNCTION IF EXISTS public.search_user_ids(
    text, integer, integer, integer, float8, float8, integer
);

DO $$
DECLARE
    attempts integer := 0;
    before text := current_setting('lock_timeout');  -- put back once the drops are done
BEGIN
    LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '100ms', true);
            DROP INDEX IF EXISTS readmodel.users_search_people_trgm;
            DROP INDEX IF EXISTS readmodel.users_search_mail_trgm;
            PERFORM set_config('lock_timeout', before, true);
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            attempts := attempts + 1;
            IF attempts >= 600 THEN
                RAISE EXCEPTION 'readmodel.users was read without a pause for five minutes: '
                                'run migrate again once the long reader is done';
            END IF;
            PERFORM pg_sleep(0.4);
        END;
    END LOOP;
END
$$;
