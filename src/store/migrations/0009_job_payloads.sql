-- A job's payload (the delivery as GitHub sent it, ~24 KB for a pull request) lives in its own
-- table, written once when the job is queued and deleted once when it is done. In the `jobs`
-- row it was rewritten by every change of state: on SQLite a claim copied all of its overflow
-- pages again, a third of the pages a delivery wrote.
CREATE TABLE IF NOT EXISTS job_payloads (
    id TEXT PRIMARY KEY,
    payload BYTEA NOT NULL
);

-- Done jobs' payloads were already emptied; failed ones keep theirs until pruned.
INSERT INTO job_payloads (id, payload) SELECT id, payload FROM jobs WHERE state <> 'done';

ALTER TABLE jobs DROP COLUMN payload;

-- No statement reads this index (the claim picks from `jobs_ready_due`), yet every change of
-- state wrote it.
DROP INDEX IF EXISTS jobs_open_seq;

-- Only keyed jobs are looked up by key: a job without a pull request or fleet (most have no
-- fleet) no longer costs an index entry at each change of state. The statements that use these
-- indexes say `<> ''` so that the planner may.
DROP INDEX IF EXISTS jobs_open_pr;

DROP INDEX IF EXISTS jobs_open_fleet;

CREATE INDEX IF NOT EXISTS jobs_open_pr ON jobs (pr_key, seq) WHERE state IN ('queued', 'running') AND pr_key <> '';

CREATE INDEX IF NOT EXISTS jobs_open_fleet ON jobs (fleet_key, seq) WHERE state IN ('queued', 'running') AND fleet_key <> ''
