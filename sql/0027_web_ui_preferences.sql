-- What people told Unleash's web UI (events SplashSeen, FeedbackRecorded; projections/
-- preferences.py): the splash screens and tips each has seen, the feedback prompts each has
-- answered. GET /api/admin/user reads them by user; they go with the account.
CREATE TABLE readmodel.user_splashes (
    user_id   bigint NOT NULL,
    splash_id text NOT NULL,
    CONSTRAINT user_splashes_pkey PRIMARY KEY (user_id, splash_id)
);

CREATE TABLE readmodel.user_feedback (
    user_id     bigint NOT NULL,
    feedback_id text NOT NULL,
    given       timestamptz NOT NULL,
    never_show  boolean NOT NULL,
    CONSTRAINT user_feedback_pkey PRIMARY KEY (user_id, feedback_id)
);
