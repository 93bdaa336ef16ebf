-- rein store schema 5: runs by session, for ListRuns with a session (rein
-- chat --session reads the session's earlier runs). Partial: runs without
-- a session, most of them, are not in it, so creating one writes no index
-- entry. rk (the rowid) is in every index, so a session's runs come newest
-- first without a sort.
CREATE INDEX runs_session ON runs (session) WHERE session <> '';
