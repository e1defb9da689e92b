-- A stand-in so that this branch's 0029 runs (migrations are 1..N without gaps): another
-- branch of issue 43 owns 0028; the merge takes that one instead of this file.
SELECT 1;
