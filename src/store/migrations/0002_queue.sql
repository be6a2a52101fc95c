-- The webhook inbox and the durable job queue. Portable: the same text runs on SQLite and
-- PostgreSQL (SQLite accepts any type name, and stores bound bytes as they are under BYTEA).

-- Every accepted X-GitHub-Delivery, kept for the retention period: GitHub reuses the id when a
-- delivery is redelivered (up to 3 days later), and a known id is never run twice.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    delivery_id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    received_at BIGINT NOT NULL
);

CREATE INDEX IF NOT EXISTS webhook_deliveries_received_at ON webhook_deliveries (received_at);

-- One row per job. `seq` orders jobs (arrival order); jobs sharing a non-empty `pr_key` or
-- `fleet_key` run one at a time, in `seq` order. A `running` job whose `lease_until` has
-- passed belongs to a worker that died: it is taken again.
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    event TEXT NOT NULL,
    payload BYTEA NOT NULL,
    pr_key TEXT NOT NULL DEFAULT '',
    fleet_key TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL DEFAULT 'queued',
    attempts BIGINT NOT NULL DEFAULT 0,
    seq BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL DEFAULT 0,
    run_after BIGINT NOT NULL DEFAULT 0,
    lease_token TEXT NOT NULL DEFAULT '',
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until BIGINT NOT NULL DEFAULT 0,
    finished_at BIGINT NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT ''
);

CREATE INDEX IF NOT EXISTS jobs_seq ON jobs (seq);

CREATE INDEX IF NOT EXISTS jobs_open ON jobs (state, seq);

CREATE INDEX IF NOT EXISTS jobs_pr_key ON jobs (pr_key, state);

CREATE INDEX IF NOT EXISTS jobs_fleet_key ON jobs (fleet_key, state);

CREATE INDEX IF NOT EXISTS jobs_finished_at ON jobs (finished_at);
