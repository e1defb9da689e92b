-- Reserved: another slice of issue 43 takes this number; this empty stand-in keeps the
-- versions without gaps on this branch alone and is dropped when that slice is merged.
SELECT 1;
