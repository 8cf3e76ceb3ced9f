-- The assistant's turns are kept for SERVICE_AI_TURNS_RETENTION_DAYS (job assistant.prune, issue 30:
-- growth that nothing bounds). The counter service_ai_turns_total reads these totals, which
-- pruning leaves alone, where it counted every turn ever stored at each scrape.
CREATE TABLE assistant_turn_totals (
  organisation_id  uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  outcome          text NOT NULL,
  turns            bigint NOT NULL,
  PRIMARY KEY (organisation_id, outcome)
);
INSERT INTO assistant_turn_totals (organisation_id, outcome, turns)
  SELECT organisation_id, outcome, count(*) FROM assistant_turns GROUP BY organisation_id, outcome;
-- Pruning reads the oldest turns of every organisation; nothing counts turns by outcome any more.
DROP INDEX assistant_turns_outcome_idx;
CREATE INDEX assistant_turns_at_idx ON assistant_turns (at);
