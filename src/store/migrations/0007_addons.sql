-- What fleetbot installed inside each target's cluster: a JSON array of
-- {name, release_id, digest} (release_id empty for applied manifests). Release values cannot
-- be read back from the marketplace, so the digest recorded here is what a later plan
-- compares with; destroy deletes only the releases listed.
ALTER TABLE inventory_targets ADD COLUMN addons TEXT NOT NULL DEFAULT '[]';
