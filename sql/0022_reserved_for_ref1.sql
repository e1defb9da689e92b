-- Reserved for branch ref1's migration 0022 (the runner needs versions without gaps).
-- The merge drops this file: ref1's 0022 takes its place.
SELECT 1;
