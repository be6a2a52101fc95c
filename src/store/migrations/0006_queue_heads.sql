-- A queue whose claim cost does not grow with its depth. `ready` marks the head of each key:
-- a job with no older unfinished job of its pull request or fleet. Only heads are claim
-- candidates, so ten thousand jobs queued behind one in backoff cost a claim nothing.
-- `coalesce_key` names work a newer delivery makes pointless (a preflight of an older head).
ALTER TABLE jobs ADD COLUMN ready BIGINT NOT NULL DEFAULT 0;

ALTER TABLE jobs ADD COLUMN coalesce_key TEXT NOT NULL DEFAULT '';

UPDATE jobs SET ready = 1 WHERE state IN ('queued', 'running')
    AND (pr_key = '' OR NOT EXISTS (SELECT 1 FROM jobs k WHERE k.pr_key = jobs.pr_key
        AND k.state IN ('queued', 'running') AND k.id <> jobs.id
        AND (k.seq < jobs.seq OR (k.seq = jobs.seq AND k.id < jobs.id))))
    AND (fleet_key = '' OR NOT EXISTS (SELECT 1 FROM jobs k WHERE k.fleet_key = jobs.fleet_key
        AND k.state IN ('queued', 'running') AND k.id <> jobs.id
        AND (k.seq < jobs.seq OR (k.seq = jobs.seq AND k.id < jobs.id))));

-- The head checks look up older open jobs of a key in seq order: the partial (key, seq)
-- indexes of migration 3 answer that in one step, while these (key, state) ones would make a
-- planner walk every open job of the key.
DROP INDEX IF EXISTS jobs_pr_key;

DROP INDEX IF EXISTS jobs_fleet_key;

CREATE INDEX IF NOT EXISTS jobs_ready_due ON jobs (run_after, seq, id) WHERE ready = 1 AND state = 'queued';

CREATE INDEX IF NOT EXISTS jobs_running_lease ON jobs (lease_until) WHERE state = 'running';

CREATE INDEX IF NOT EXISTS jobs_coalesce ON jobs (coalesce_key, seq) WHERE state = 'queued' AND coalesce_key <> '';
