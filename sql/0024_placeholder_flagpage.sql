-- Placeholder on branch flagpage only: another branch's migration has this number. Drop this
-- file when merging (the flagpage branch's own migration is 0025).
SELECT 1;
