-- rein store schema 2: the runs in flight are listed in runs_live, written
-- in bulk with journal_index, instead of the partial index runs_active that
-- every run wrote twice (at its creation and when it settled): that index
-- was about a fifth of the writer's work with 64 runs in flight.
--
-- runs_live holds the rk of every run up to journal_mark.runs that is
-- pending, running or waiting. The runs after the mark, the tail run_flows
-- lacks too, are not in it yet: readers scan that short tail as well and
-- check each run's status. A run leaves runs_live when it settles; the
-- batch that moves the mark adds the tail's runs still in flight.
DROP INDEX runs_active;
CREATE TABLE runs_live (
    rk INTEGER PRIMARY KEY
);
INSERT INTO runs_live (rk)
    SELECT rk FROM runs
    WHERE status IN ('pending', 'running', 'waiting') AND rk <= (SELECT runs FROM journal_mark WHERE one = 1);
