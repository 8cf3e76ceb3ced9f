-- A resumable NVD pull (issue 29): the pass in progress, so a pull that failed on page N resumes
-- at page N instead of starting again (a first full pull is ~125 pages with a pause between them).
-- nvd_pass_end is the lastModEndDate (or, for a full pass, the time) the pass was started with:
-- confirmed as nvd_through when its last page is in; nvd_pass_from its lastModStartDate (null: a
-- full pass); nvd_pass_index the startIndex of the next page to read; nvd_pass_url the feed URL
-- the pass reads (the row's url stays the last feed pulled in full, whose validators it keeps).
ALTER TABLE advisory_feed
  ADD COLUMN nvd_pass_url   text,
  ADD COLUMN nvd_pass_end   timestamptz,
  ADD COLUMN nvd_pass_from  timestamptz,
  ADD COLUMN nvd_pass_index integer;
