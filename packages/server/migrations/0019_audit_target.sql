-- A finding's history (issue 23) reads the audit rows of one target: index them by target, in time order.
CREATE INDEX audit_log_target_idx ON audit_log (organisation_id, target_type, target_id, occurred_at);
