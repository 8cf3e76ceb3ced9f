-- The inventory assistant (issue 27): one row per question, what the metrics count (turns and
-- provider errors by outcome) and what an operator can audit (who asked, how much it cost). Never
-- the conversation: no prompt, tool output or answer is stored.
CREATE TABLE assistant_turns (
  organisation_id    uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id                 uuid NOT NULL DEFAULT gen_random_uuid(),
  user_id            uuid,
  at                 timestamptz NOT NULL DEFAULT now(),
  outcome            text NOT NULL CHECK (outcome IN ('ok', 'rate_limited', 'upstream_error', 'upstream_timeout', 'aborted', 'error')),
  rounds             integer NOT NULL,
  tools              text[] NOT NULL DEFAULT '{}',
  prompt_tokens      integer NOT NULL DEFAULT 0,
  completion_tokens  integer NOT NULL DEFAULT 0,
  latency_ms         integer NOT NULL,
  PRIMARY KEY (organisation_id, id)
);
CREATE INDEX assistant_turns_outcome_idx ON assistant_turns (organisation_id, outcome);
