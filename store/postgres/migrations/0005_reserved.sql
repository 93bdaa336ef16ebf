-- rein store schema 5 is another change's (merged separately); this file
-- only keeps the numbers without a gap until it lands, and is dropped then.
SELECT 1;
