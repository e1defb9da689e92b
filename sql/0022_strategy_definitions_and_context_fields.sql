-- Reference data of the flag pages (issue 42): custom strategy types, the deprecation of every
-- strategy type, and context fields. The built-in strategy types and context fields are
-- constants of the service (as Unleash seeds them); these tables hold what events changed.

-- Custom strategy types: `parameters` holds [{name, type, description, required}].
CREATE TABLE readmodel.strategy_definitions (
    name        text NOT NULL,
    title       text,
    description text,
    parameters  jsonb NOT NULL,
    created_at  timestamptz NOT NULL,
    CONSTRAINT strategy_definitions_pkey PRIMARY KEY (name)
);

-- Whether a strategy type (built in or custom) was deprecated or reactivated last; no row: as
-- it came (a built-in type's own flag; a custom one is active).
CREATE TABLE readmodel.strategy_deprecations (
    name       text NOT NULL,
    deprecated boolean NOT NULL,
    CONSTRAINT strategy_deprecations_pkey PRIMARY KEY (name)
);

-- Custom context fields, and the built-in ones once changed (`created_at` null for those: they
-- came with the service). `legal_values` holds [{value, description}].
CREATE TABLE readmodel.context_fields (
    name         text NOT NULL,
    description  text,
    legal_values jsonb NOT NULL,
    stickiness   boolean NOT NULL,
    sort_order   integer NOT NULL,
    created_at   timestamptz,
    CONSTRAINT context_fields_pkey PRIMARY KEY (name)
);
