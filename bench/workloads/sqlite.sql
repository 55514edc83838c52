-- The sqlite3 workload (server-shaped: an in-memory table with indexes under
-- inserts, point queries, range aggregates, updates and deletes).  The
-- runner replaces @N@ with the row count.  MIT licence.
PRAGMA cache_size = -262144;
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, name TEXT, val REAL, payload BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < @N@)
INSERT INTO t SELECT x, abs(random()) % 100000, 'name-' || (abs(random()) % 50000), random() / 1e12, randomblob(abs(random()) % 200 + 20) FROM c;
CREATE INDEX t_k ON t(k);
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(length(payload)) FROM t WHERE k BETWEEN 1000 AND 60000;
SELECT name, count(*), avg(val) FROM t GROUP BY name ORDER BY count(*) DESC LIMIT 3;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < @N@ / 2)
SELECT sum(val) FROM c JOIN t ON t.id = (c.x * 7919) % @N@ + 1;
UPDATE t SET payload = randomblob(abs(random()) % 300 + 10), name = name || '-u' WHERE k % 3 = 0;
DELETE FROM t WHERE k % 5 = 0;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < @N@ / 4)
INSERT INTO t(k, name, val, payload) SELECT abs(random()) % 100000, 'new-' || x, x, randomblob(x % 500 + 1) FROM c;
SELECT count(*), sum(length(name)) FROM t WHERE name LIKE 'name-1%';
SELECT k, group_concat(id) FROM (SELECT k, id FROM t WHERE k < 2000 ORDER BY k) GROUP BY k ORDER BY k LIMIT 1;
