-- User search: one trigram index instead of two (issue 18).
--
-- sql/0017 indexed the joined names (search_people) and the joined e-mail (search_mail) in a
-- trigram index each, and a search that fell to them read both and OR-ed the bitmaps. Where a
-- query's trigrams are common (`user00042` among 10,000 `userNNNNN`: `use`, `ser`, `r00` are in
-- everyone's name and e-mail) that was two walks through the same long posting lists: 0.59 ms of
-- a 1.33 ms search of one person at 10,000 users, the search's largest single cost. One index on
-- both columns, joined by a space, is read once: 0.25 ms, and the search takes 0.78 ms.
--
-- The space keeps a match from spanning the two: a joined needle holds no space (every run of
-- other characters became `ǂ`), and pg_trgm splits words at it. A field that holds the needle
-- still makes the joined text hold the joined needle; what the index returns is checked against
-- the fields (search_inside_only), as before. A query with a space (no e-mail can hold it) is
-- now looked for among the e-mails' trigrams too; what they add is dropped by that check.
--
-- Building the index holds writes to readmodel.users (not reads) for its duration: 0.14 s at
-- 10,000 users, 22 s for a million rows of random text (docs/operations.md). The function of
-- nine arguments keeps its signature and its answers, so the previous release, which calls it,
-- reads the new index too. sql/0017's function of seven arguments, which no release still
-- running calls, and the two indexes it read go in sql/0021, in a transaction of their own:
-- dropping an index locks its table against reads too.

CREATE INDEX users_search_joined_trgm ON readmodel.users
    USING gin ((search_people || ' ' || search_mail) gin_trgm_ops) WITH (fastupdate = off);

-- The ids of the first p_wanted users matching p_query (trimmed, at least two characters), in
-- result order: exact matches, then prefix matches, then other substrings; each tier by name,
-- then id. How the third tier is found is chosen from what the first p_head people in name
-- order show (service/users/handlers/search.py explains the costs and passes the constants).
CREATE OR REPLACE FUNCTION public.search_user_ids(
    p_query text, p_wanted integer, p_head integer, p_probe integer, p_match_cost float8,
    p_walk_slack float8, p_walk_most integer, p_small integer, p_sampled integer
) RETURNS bigint[]
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    -- PostgreSQL lower-cases as it did the stored fields (Python's lower() differs for a few
    -- letters); \ % and _ are escaped for LIKE.
    needle text := lower(p_query);
    pattern text := replace(replace(replace(needle, '\', '\\'), '%', '\%'), '_', '\_');
    starts text := pattern || '%';
    last_code integer := ascii(right(needle, 1));
    -- Every field that starts with the needle is at least the needle and below this (NULL when
    -- the last character has no successor PostgreSQL can make).
    high text := CASE WHEN last_code IN (55295, 1114111) THEN NULL
                      ELSE left(needle, -1) || chr(last_code + 1) END;
    group_key text := substr(needle, 1, 3);  -- the grouped indexes' key (0010)
    -- The needle joined as search_people and search_mail are: a field that holds the needle
    -- makes its joined column hold this.
    joined text := regexp_replace(needle, '[^[:alnum:]]+', 'ǂ', 'g');
    joined_inside text := '%' || joined || '%';
    returned float8;  -- the share of everyone the trigram indexes return, estimated
    exact bigint[];
    prefix bigint[];
    rest bigint[];
    probed integer;
    walked integer;
    missing integer;
    share float8;
    walk float8;
    indexed float8;
    everyone float8;
    bound bigint;
BEGIN
    SELECT coalesce(array_agg(e.id ORDER BY e.name, e.id), '{}') INTO exact
    FROM (SELECT u.id, u.name FROM users u
          WHERE u.account_type = 'User'
            AND (u.search_name COLLATE "C" = needle OR u.search_username COLLATE "C" = needle
                 OR u.search_email COLLATE "C" = needle)
          ORDER BY u.name || '', u.id LIMIT p_wanted) e;

    -- Prefixes: counted in the equality indexes first; up to p_probe of them are read again
    -- and sorted here. More (a broad prefix) are read in name order from the grouped indexes,
    -- a page at most from each field.
    SELECT count(*) INTO probed FROM (
        SELECT 1 FROM (
            (SELECT u.id, u.name FROM users u
             WHERE u.account_type = 'User'
               AND u.search_name COLLATE "C" >= needle AND u.search_name COLLATE "C" < high)
            UNION ALL
            (SELECT u.id, u.name FROM users u
             WHERE u.account_type = 'User'
               AND u.search_username COLLATE "C" >= needle
               AND u.search_username COLLATE "C" < high)
            UNION ALL
            (SELECT u.id, u.name FROM users u
             WHERE u.account_type = 'User'
               AND u.search_email COLLATE "C" >= needle AND u.search_email COLLATE "C" < high)
        ) r LIMIT p_probe + 1
    ) r;
    prefix := '{}';
    IF probed > 0 AND probed <= p_probe AND high IS NOT NULL THEN
        SELECT array(
            SELECT d.id FROM (
                SELECT DISTINCT r.id, r.name FROM (
            (SELECT u.id, u.name FROM users u
             WHERE u.account_type = 'User'
               AND u.search_name COLLATE "C" >= needle AND u.search_name COLLATE "C" < high)
            UNION ALL
            (SELECT u.id, u.name FROM users u
             WHERE u.account_type = 'User'
               AND u.search_username COLLATE "C" >= needle
               AND u.search_username COLLATE "C" < high)
            UNION ALL
            (SELECT u.id, u.name FROM users u
             WHERE u.account_type = 'User'
               AND u.search_email COLLATE "C" >= needle AND u.search_email COLLATE "C" < high)
                ) r WHERE r.id <> ALL (exact)
            ) d ORDER BY d.name, d.id LIMIT p_wanted)
        INTO prefix;
    ELSIF probed > p_probe OR high IS NULL THEN  -- a broad prefix
        IF length(needle) < 3 THEN
            -- Two characters: their groups are a range, not in name order. More than p_probe
            -- match, so a walk in name order finds a page within about
            -- p_wanted * everyone / p_probe people: when that is at most p_walk_most, walk.
            SELECT greatest(c.reltuples, 0) INTO everyone FROM pg_class c
            WHERE c.oid = 'users'::regclass;
            -- (probed is 0 where high is NULL: nothing could be counted, so no walk)
            bound := ceil(p_walk_slack * p_wanted * everyone / greatest(probed, 1));
            IF bound <= p_walk_most THEN
                SELECT coalesce(array_agg(w.id ORDER BY w.name, w.id), '{}') INTO prefix
                FROM (SELECT w.id, w.name
                      FROM (SELECT u.id, u.name, u.search_name, u.search_username, u.search_email
                            FROM users u WHERE u.account_type = 'User'
                            ORDER BY u.name, u.id LIMIT bound) w
                      WHERE coalesce(starts_with(w.search_name, needle)
                                     OR starts_with(w.search_username, needle)
                                     OR starts_with(w.search_email, needle), false)
                        AND w.id <> ALL (exact)
                      ORDER BY w.name, w.id LIMIT p_wanted) w;
            END IF;
            IF cardinality(prefix) < p_wanted THEN
                -- Planned on every call, with the values written in (as parameters they would
                -- be left out of the estimates): whether to walk the name order or sort the
                -- range depends on how many match.
                EXECUTE format($sql$
                    SELECT coalesce(array_agg(p.id ORDER BY p.name, p.id), '{}')
                    FROM (SELECT p.id, p.name FROM (
                              (SELECT u.id, u.name FROM users u
                               WHERE u.account_type = 'User'
                                 AND substr(u.search_name, 1, 3) COLLATE "C"
                                     BETWEEN %1$L AND %1$L || chr(1114111)
                                 AND u.search_name LIKE %2$L
                               ORDER BY u.name, u.id LIMIT %3$s)
                              UNION
                              (SELECT u.id, u.name FROM users u
                               WHERE u.account_type = 'User' AND u.search_username IS NOT NULL
                                 AND substr(u.search_username, 1, 3) COLLATE "C"
                                     BETWEEN %1$L AND %1$L || chr(1114111)
                                 AND u.search_username LIKE %2$L
                               ORDER BY u.name, u.id LIMIT %3$s)
                              UNION
                              (SELECT u.id, u.name FROM users u
                               WHERE u.account_type = 'User' AND u.search_email IS NOT NULL
                                 AND substr(u.search_email, 1, 3) COLLATE "C"
                                     BETWEEN %1$L AND %1$L || chr(1114111)
                                 AND u.search_email LIKE %2$L
                               ORDER BY u.name, u.id LIMIT %3$s)
                          ) p
                          WHERE p.id <> ALL (%4$L)
                          ORDER BY p.name, p.id LIMIT %3$s) p
                $sql$, needle, starts, p_wanted, exact) INTO prefix;
            END IF;
        ELSE  -- one group, in name order, and in it those that go on like the needle
            SELECT coalesce(array_agg(p.id ORDER BY p.name, p.id), '{}') INTO prefix
            FROM (SELECT p.id, p.name FROM (
                      (SELECT u.id, u.name FROM users u
                       WHERE u.account_type = 'User'
                         AND substr(u.search_name, 1, 3) COLLATE "C" = group_key
                         AND u.search_name LIKE starts
                       ORDER BY u.name, u.id LIMIT p_wanted)
                      UNION
                      (SELECT u.id, u.name FROM users u
                       WHERE u.account_type = 'User' AND u.search_username IS NOT NULL
                         AND substr(u.search_username, 1, 3) COLLATE "C" = group_key
                         AND u.search_username LIKE starts
                       ORDER BY u.name, u.id LIMIT p_wanted)
                      UNION
                      (SELECT u.id, u.name FROM users u
                       WHERE u.account_type = 'User' AND u.search_email IS NOT NULL
                         AND substr(u.search_email, 1, 3) COLLATE "C" = group_key
                         AND u.search_email LIKE starts
                       ORDER BY u.name, u.id LIMIT p_wanted)
                  ) p
                  WHERE p.id <> ALL (exact)
                  ORDER BY p.name, p.id LIMIT p_wanted) p;
        END IF;
    END IF;

    missing := p_wanted - cardinality(exact) - cardinality(prefix);
    IF missing <= 0 THEN
        RETURN (exact || prefix)[1:p_wanted];
    END IF;

    -- The third tier among the first p_head people by name (the walk stops at a page).
    SELECT coalesce(array_agg(w.id ORDER BY w.name, w.id), '{}') INTO rest
    FROM (SELECT w.id, w.name
          FROM (SELECT u.id, u.name, u.search_name, u.search_username, u.search_email
                FROM users u WHERE u.account_type = 'User'
                ORDER BY u.name, u.id LIMIT p_head) w
          WHERE public.search_inside_only(
                    w.search_name, w.search_username, w.search_email, needle)
          ORDER BY w.name, w.id LIMIT missing) w;
    IF cardinality(rest) >= missing THEN
        RETURN exact || prefix || rest;
    END IF;
    -- Whether that was everyone: counted where the table may be that small (its size as
    -- PostgreSQL last estimated it; never estimated: 0). Where it is not, a wrong estimate
    -- costs a search that finds nothing more, never a wrong page.
    SELECT greatest(c.reltuples, 0) INTO everyone FROM pg_class c
    WHERE c.oid = 'users'::regclass;
    walked := p_head;
    IF everyone < 2 * p_head THEN
        SELECT count(*) INTO walked
        FROM (SELECT 1 FROM users u WHERE u.account_type = 'User' LIMIT p_head) w;
        IF walked < p_head THEN
            RETURN exact || prefix || rest;
        END IF;
    END IF;
    everyone := greatest(everyone, walked);

    -- The share of matches estimates how far a walk in name order must go, and the share the
    -- trigram index returns how many people it gives to be fetched and checked (in people
    -- walked: indexed); the cheaper is taken. A walk goes at most p_walk_slack times as far
    -- as estimated, and never further than the trigram index would cost, so that one that
    -- falls short (an estimate from a few matches is rough) costs at most twice the better
    -- way; its answer is then the trigram index's.
    IF everyone > p_small THEN
        -- The first people by name are not like everyone (their names start alike): both
        -- shares are taken from people in random pages instead.
        SELECT greatest(count(*) FILTER (
                   WHERE public.search_inside_only(
                       u.search_name, u.search_username, u.search_email, needle)), 0.5)
               / greatest(count(*), 1),
               count(*) FILTER (
                   WHERE (u.search_people || ' ' || u.search_mail) LIKE joined_inside)::float8
               / greatest(count(*), 1)
        INTO share, returned
        FROM users u TABLESAMPLE SYSTEM (least(100, 100.0 * p_sampled / everyone))
        WHERE u.account_type = 'User';
    ELSE
        -- A small table: the first people by name tell, and the trigram indexes return about
        -- the matches (a person returned and no match is rare: the joined query's every
        -- trigram, not in a row); walking the rest is short anyway.
        share := greatest(cardinality(rest), 0.5) / p_head;
        returned := share;
    END IF;
    IF length(joined) < 3 THEN
        returned := 1;  -- no trigram: the indexes would return everyone
    END IF;
    -- People to walk past the first p_head (whose matches are in rest already); a walk ends
    -- with everyone.
    walk := least((missing - cardinality(rest)) / share, everyone);
    indexed := p_match_cost * everyone * greatest(share, returned);
    IF walk < indexed THEN
        -- Near everyone anyway: walk to the end (LIMIT NULL), and the result is complete.
        bound := CASE WHEN p_head + least(p_walk_slack * walk, indexed) >= everyone THEN NULL
                      ELSE ceil(least(p_walk_slack * walk, indexed)) END;
        SELECT rest || coalesce(array_agg(w.id ORDER BY w.name, w.id), '{}') INTO rest
        FROM (SELECT w.id, w.name
              FROM (SELECT u.id, u.name, u.search_name, u.search_username, u.search_email
                    FROM users u WHERE u.account_type = 'User'
                    ORDER BY u.name, u.id OFFSET p_head LIMIT bound) w
              WHERE public.search_inside_only(
                        w.search_name, w.search_username, w.search_email, needle)
              ORDER BY w.name, w.id LIMIT missing - cardinality(rest)) w;
        IF cardinality(rest) = missing OR bound IS NULL THEN
            RETURN exact || prefix || rest;
        END IF;
    END IF;

    -- The trigram index: every match, sorted (`name || ''` keeps the planner from walking the
    -- name order instead).
    SELECT coalesce(array_agg(w.id ORDER BY w.name, w.id), '{}') INTO rest
    FROM (SELECT w.id, w.name FROM users w
          WHERE w.account_type = 'User'
            AND (w.search_people || ' ' || w.search_mail) LIKE joined_inside
            AND public.search_inside_only(
                    w.search_name, w.search_username, w.search_email, needle)
          ORDER BY w.name || '', w.id LIMIT missing) w;
    RETURN exact || prefix || rest;
END
$$;
