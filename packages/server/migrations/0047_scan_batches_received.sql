-- Issue 30 (growth nothing bounds): the digests of the observation batches each scan session has
-- applied (0006) were kept as long as their session, that is for ever: one row a batch, 66 for a
-- daily /16 sweep, about 660,000 a day for 10,000 organisations sweeping one. A retry comes within
-- minutes of its batch; job topology.dependencies now forgets digests older than the flows'
-- 30 days, as it does the flow batches' (flow_batches_received_idx, 0007), in bounded deletes
-- that read this index.
CREATE INDEX scan_batches_received_idx ON scan_batches (received_at);
