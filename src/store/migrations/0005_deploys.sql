-- Merge-to-deploy's durable state: the plan each pull request was reviewed on, destroy
-- approvals, the audit log and the per-fleet apply leases.

-- One row per (pull request, head commit, fleet): a later preflight of the same head
-- replaces it, so the merge applies what the sticky comment showed last.
CREATE TABLE IF NOT EXISTS deploy_reviewed_plans (
    pr_key TEXT NOT NULL,
    head_sha TEXT NOT NULL,
    fleet_path TEXT NOT NULL,
    digest TEXT NOT NULL,
    -- What the plan does, by role names (JSON), to say what changed since review.
    summary TEXT NOT NULL,
    recorded_at BIGINT NOT NULL,
    PRIMARY KEY (pr_key, head_sha, fleet_path)
);

-- An apply job that passed the guard for a fleet, recorded before its first mutation: the
-- job resumed after a crash finds it and continues instead of asking for review again.
CREATE TABLE IF NOT EXISTS deploy_apply_runs (
    job_id TEXT NOT NULL,
    fleet_path TEXT NOT NULL,
    digest TEXT NOT NULL,
    destructive_approved BIGINT NOT NULL,
    started_at BIGINT NOT NULL,
    PRIMARY KEY (job_id, fleet_path)
);

-- An approval names the plan digest it was given on: a changed plan needs a new one.
CREATE TABLE IF NOT EXISTS deploy_approvals (
    pr_key TEXT NOT NULL,
    fleet_path TEXT NOT NULL,
    digest TEXT NOT NULL,
    approver TEXT NOT NULL,
    approved_at BIGINT NOT NULL,
    PRIMARY KEY (pr_key, fleet_path, digest)
);

-- Append-only. `id` (a UUID) gives every row a key, so old records can be pruned on a
-- replicated PostgreSQL; `seq` keeps the append order within one millisecond (computed like
-- jobs.seq, without auto-increment, which is not portable). `repo_key` is `repo` lowercased,
-- so the case-insensitive lookup is an index range on both engines.
CREATE TABLE IF NOT EXISTS deploy_audit (
    id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    at BIGINT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    repo TEXT NOT NULL,
    repo_key TEXT NOT NULL,
    pr BIGINT NOT NULL,
    sha TEXT NOT NULL,
    fleet TEXT NOT NULL,
    outcome TEXT NOT NULL,
    digest TEXT NOT NULL,
    detail TEXT NOT NULL
);

-- A repository's records newest first (scanned backwards).
CREATE INDEX IF NOT EXISTS deploy_audit_repo ON deploy_audit (repo_key, at, seq);

-- MAX(seq) on append.
CREATE INDEX IF NOT EXISTS deploy_audit_seq ON deploy_audit (seq);

-- One row per fleet ever leased, never deleted: release and /unlock set owner '' and
-- expires_at 0 but keep `token`, so every later acquisition's token is greater than all
-- before it.
CREATE TABLE IF NOT EXISTS deploy_leases (
    fleet_key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    holder TEXT NOT NULL,
    token BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
