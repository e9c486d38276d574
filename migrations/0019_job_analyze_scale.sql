-- Migration 0010 analyzes the job table after 50,000 changed rows whatever its size. Behind a long
-- history that is an ANALYZE of a 10-million-row table every 10-15 s under a steady 2,000 jobs a
-- second (its 30,000-page sample: about a second of a core and 200 MB read each time), which is
-- one of the bursts the lease's p99 met; and the statistics of 10 million mostly final rows do not
-- move in 50,000 changes. Now: after 50,000 changes plus 5 % of the table. A small table is still
-- analyzed as often as before (100,000 rows: after 55,000 changes); 10 million rows after 550,000
-- (PostgreSQL's default would be 10 %). The vacuum settings of 0010 and 0016 stay as they are.
ALTER TABLE job SET (autovacuum_analyze_scale_factor = 0.05);
