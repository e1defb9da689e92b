-- Reporting tools: the role `flagstore_reporting` may read the views of schema `reporting` and
-- nothing else; logins join it (`python -m service reporting-user NAME`, docs/reporting.md).

-- Roles belong to the cluster, migrations to one database, and several databases of a cluster
-- may migrate at once (each under its own advisory lock): create the role only when it is
-- missing, and take one created meanwhile by another database's migration as done.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'flagstore_reporting') THEN
        CREATE ROLE flagstore_reporting NOLOGIN;
    END IF;
EXCEPTION
    WHEN duplicate_object OR unique_violation THEN
        NULL;
    WHEN insufficient_privilege THEN
        -- Every later view is granted to the role, so going on without it is no option.
        RAISE EXCEPTION 'role flagstore_reporting does not exist and % may not create it',
                current_user
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Create it once as a role with CREATEROLE (CREATE ROLE '
                      'flagstore_reporting NOLOGIN; on CloudNativePG a managed role) and '
                      'migrate again (docs/reporting.md).';
END
$$;

-- The views run with their owner's rights, so the role needs nothing in `readmodel`.
-- ALL TABLES: every view made so far, whichever migration made it.
GRANT USAGE ON SCHEMA reporting TO flagstore_reporting;
GRANT SELECT ON ALL TABLES IN SCHEMA reporting TO flagstore_reporting;
-- Views the migrating user makes later are granted too; a migration that adds one still
-- grants it explicitly (docs/reporting.md, "Versioning rule"): another user may run it.
ALTER DEFAULT PRIVILEGES IN SCHEMA reporting GRANT SELECT ON TABLES TO flagstore_reporting;

-- What PostgreSQL grants PUBLIC, and so every login: CONNECT and TEMP on the database, and
-- before PostgreSQL 15 CREATE on schema public. Take away what writes, where this user may.
-- (A copy of the database made from a template does not carry database-level grants.)
DO $$
DECLARE
    database_owner oid := (SELECT datdba FROM pg_database WHERE datname = current_database());
    public_owner oid := (SELECT nspowner FROM pg_namespace WHERE nspname = 'public');
BEGIN
    IF pg_has_role(current_user, database_owner, 'USAGE') THEN
        -- The service makes scratch schemas (replay, verify) and may use temporary tables:
        -- it keeps both by a grant of its own before PUBLIC loses TEMP.
        EXECUTE format('GRANT CREATE, TEMPORARY ON DATABASE %I TO %I',
                       current_database(), current_user);
        EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
        -- Reporting keeps its way in should PUBLIC lose CONNECT one day.
        EXECUTE format('GRANT CONNECT ON DATABASE %I TO flagstore_reporting', current_database());
    ELSE
        RAISE NOTICE 'flagstore_reporting: PUBLIC keeps TEMP on database %: % does not own it',
            current_database(), current_user;
    END IF;
    IF pg_has_role(current_user, public_owner, 'USAGE') THEN
        REVOKE CREATE ON SCHEMA public FROM PUBLIC;
    ELSIF has_schema_privilege('public', 'public', 'CREATE') THEN
        RAISE NOTICE 'flagstore_reporting: PUBLIC keeps CREATE on schema public: % owns it, '
            'not %', public_owner::regrole, current_user;
    END IF;
    -- Large objects: any role may create them (and fill them), which no grant on a table
    -- stops. Only the owner of these functions, the bootstrap superuser, may take them away;
    -- the service never uses large objects.
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        REVOKE EXECUTE ON FUNCTION lo_create(oid), lo_creat(integer), lo_from_bytea(oid, bytea),
            lo_import(text), lo_import(text, oid) FROM PUBLIC;
    ELSE
        RAISE NOTICE 'flagstore_reporting: PUBLIC may still create large objects: % is no '
            'superuser (docs/reporting.md)', current_user;
    END IF;
END
$$;
