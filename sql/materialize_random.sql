-- Materialized aggregates under random transactions: after every
-- transaction (committed or rolled back) of random inserts, overwrites,
-- updates of grouping columns, deletes, subtransactions that fail, bulk
-- writes that spill, the odd TRUNCATE and DDL (ADD COLUMN with a default,
-- RENAME COLUMN, a refused DROP COLUMN, switches to full-compaction and
-- back) and pk_write, each aggregate equals its query (pk_reconcile finds
-- no group that differs; while full-compaction, as of a full compaction,
-- which pk_reconcile runs first).  lookup is written with
-- plain SQL (blind overwrites included); input with the statements that
-- carry old rows (overwrites as INSERT ... ON CONFLICT DO UPDATE).
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;
SET client_min_messages = warning;

CREATE PROCEDURE mat_random(src regclass, ntx int, seed float8, upsert text)
LANGUAGE plpgsql AS $$
DECLARE
	r float8;
	k int;
	bad bigint;
	rolled int := 0;
	is_full boolean;
	producer text;
	ops text;
BEGIN
	SELECT value INTO producer FROM pk_options(src) WHERE key = 'changelog_producer';
	PERFORM setseed(seed);
	FOR i IN 1..ntx LOOP
		ops := '';
		FOR j IN 1..(1 + floor(random() * 4))::int LOOP
			r := random();
			k := floor(random() * 200)::int;
			ops := ops || format(' %s/%s', round(r::numeric, 3), k);
			IF r < 0.25 THEN
				EXECUTE format('INSERT INTO %s VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING', src)
				USING k, floor(random() * 6)::int,
					CASE WHEN random() < 0.1 THEN NULL ELSE floor(random() * 100)::int END,
					CASE WHEN random() < 0.1 THEN NULL ELSE chr(97 + floor(random() * 5)::int) END;
			ELSIF r < 0.45 THEN
				EXECUTE format(upsert, src)
				USING k, floor(random() * 6)::int, floor(random() * 100)::int,
					chr(97 + floor(random() * 5)::int);
			ELSIF r < 0.6 THEN
				EXECUTE format('UPDATE %s SET g = $2 WHERE id BETWEEN $1 AND $1 + 5', src)
				USING k, floor(random() * 6)::int;
			ELSIF r < 0.72 THEN
				EXECUTE format('UPDATE %s SET v = v + $2, s = $3 WHERE id BETWEEN $1 AND $1 + 3', src)
				USING k, floor(random() * 10)::int - 5, chr(97 + floor(random() * 5)::int);
			ELSIF r < 0.74 THEN
				EXECUTE format('UPDATE %s SET id = id + 1000 WHERE id = $1', src) USING k;
			ELSIF r < 0.86 THEN
				EXECUTE format('DELETE FROM %s WHERE id BETWEEN $1 AND $1 + 3 OR id > 1000 AND id %% 7 = $2', src)
				USING k, k % 7;
			ELSIF r < 0.99 THEN
				BEGIN
					EXECUTE format('UPDATE %s SET g = g + 1, v = v * 2 WHERE id %% 5 = $1', src) USING k % 5;
					EXECUTE format('DELETE FROM %s WHERE id %% 9 = $1', src) USING k % 9;
					RAISE EXCEPTION 'undo';
				EXCEPTION WHEN raise_exception THEN
					NULL;
				END;
			ELSIF r < 0.995 THEN
				-- a bulk write, over write_buffer_size: spilled runs
				EXECUTE format('INSERT INTO %s SELECT 2000 + x, x %% 6, x %% 50, repeat(''b'', 400)
					FROM generate_series(1, 3000) x
					ON CONFLICT (id) DO UPDATE SET g = EXCLUDED.g, v = EXCLUDED.v, s = EXCLUDED.s', src);
				EXECUTE format('DELETE FROM %s WHERE id > 2000 AND id %% 50 <> $1', src) USING k % 50;
			ELSIF r < 0.995 THEN
				EXECUTE format('TRUNCATE %s', src);
			ELSE
				-- DDL between the writes of one transaction
				k := k % 5;
				IF k = 0 THEN
					EXECUTE format('ALTER TABLE %s ADD COLUMN IF NOT EXISTS extra_%s int DEFAULT %s',
						src, i % 4, i);
				ELSIF k = 1 THEN
					EXECUTE format('ALTER TABLE %s RENAME COLUMN v TO v_renamed', src);
					EXECUTE format('UPDATE %s SET v_renamed = v_renamed + 1 WHERE id %% 4 = $1', src)
					USING i % 4;
					EXECUTE format('ALTER TABLE %s RENAME COLUMN v_renamed TO v', src);
				ELSIF k = 2 THEN
					-- the producer switches (compacting everything first) and back
					SELECT value = 'full-compaction' INTO is_full FROM pk_options(src)
					WHERE key = 'changelog_producer';
					EXECUTE format('ALTER TABLE %s SET (changelog_producer = %L)', src,
						CASE WHEN is_full THEN producer ELSE 'full-compaction' END);
				ELSIF k = 3 THEN
					-- a refused DROP COLUMN (an aggregate reads it), in a subtransaction
					BEGIN
						EXECUTE format('ALTER TABLE %s DROP COLUMN v', src);
					EXCEPTION WHEN dependent_objects_still_exist THEN
						NULL;
					END;
				ELSE
					-- a RowKind written with pk_write: the -D of an existing row
					EXECUTE format('SELECT count(pk_write(%L, ''-D'', t)) FROM %s t WHERE id = $1', src, src)
					USING k;
				END IF;
			END IF;
		END LOOP;
		IF random() < 0.1 THEN
			ROLLBACK;
			rolled := rolled + 1;
		ELSE
			COMMIT;
		END IF;
		SELECT sum((SELECT count(*) FROM pk_reconcile(m.name::text))) INTO bad
		FROM pk_materializations m WHERE m.source = src;
		IF bad > 0 THEN
			RAISE EXCEPTION 'an aggregate of % differs from its query after transaction %', src, i
			USING DETAIL = format('Its statements (random draw/key):%s.', ops);
		END IF;
		COMMIT;
	END LOOP;
	RAISE NOTICE '% transactions on %, % rolled back: every aggregate exact after each',
		ntx, src, rolled;
END $$;

CREATE FUNCTION mat_random_setup(src text, producer text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE %I (id int PRIMARY KEY, g int, v int, s text) USING pkmerge
		WITH (changelog_producer = %L, write_buffer_size = ''1MB'')', src, producer);
	PERFORM pk_materialize(src || '_sums',
		format('SELECT g, sum(v) AS v, count(*) AS n, avg(v) AS a FROM %I GROUP BY g', src));
	PERFORM pk_materialize(src || '_ext',
		format('SELECT g, s, min(v) AS lo, max(v) AS hi, count(v) AS nv FROM %I WHERE v %% 3 <> 0 GROUP BY g, s', src));
	PERFORM pk_materialize(src || '_all',
		format('SELECT count(*) AS n, sum(v) AS v, max(s) AS s FROM %I', src));
	PERFORM pk_materialize(src || '_expr',
		format('SELECT coalesce(s, ''?'') || (g %% 2)::text AS k, min(s) AS lo, sum(v * 2) AS v2 FROM %I GROUP BY 1', src));
END $$;

SELECT mat_random_setup('rnd_lookup', 'lookup');
SET client_min_messages = notice;
CALL mat_random('rnd_lookup', 1500, 0.25,
	'INSERT INTO %s VALUES ($1, $2, $3, $4)');
-- (input warns at each pk_materialize: writers must supply complete changes)
SET client_min_messages = error;
SELECT mat_random_setup('rnd_input', 'input');
SET client_min_messages = notice;
CALL mat_random('rnd_input', 1500, 0.5,
	'INSERT INTO %s VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET g = EXCLUDED.g, v = EXCLUDED.v, s = EXCLUDED.s');
-- the aggregates were not empty all along
SELECT (SELECT count(*) > 0 FROM rnd_lookup_ext) AS lookup_groups,
	(SELECT count(*) > 0 FROM rnd_input_ext) AS input_groups;

SET client_min_messages = warning;
DROP TABLE rnd_lookup, rnd_input CASCADE;
DROP PROCEDURE mat_random(regclass, int, float8, text);
DROP FUNCTION mat_random_setup(text, text);
