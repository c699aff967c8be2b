-- pk_write.sql: pk_write(rel, rowkind, row) acts as the SQL statement its
-- RowKind amounts to (+I an INSERT, +U an INSERT ... ON CONFLICT (key) DO
-- UPDATE, -U/-D a DELETE of the key): constraints, row-level security and
-- triggers apply as they do to that statement; the input producer's stream
-- still holds exactly the RowKinds pk_write was given.  Also: under
-- row-level security an INSERT does not replace another row (it would
-- skip the UPDATE policies).
-- The background worker leaves this suite's tables alone: it counts their
-- snapshots and runs.
SET pkchangelog.default_worker_enabled = off;

-- constraints: CHECK and NOT NULL on both paths of +U; a domain's checks
-- run when the row is made (as for INSERT ... SELECT)
CREATE DOMAIN pw_positive AS int CHECK (VALUE > 0);
CREATE TABLE pw_c (k int PRIMARY KEY, v int CHECK (v > 0), w text NOT NULL,
	d pw_positive) USING pkmerge;
INSERT INTO pw_c VALUES (2, 2, 'two', 2);
SELECT pk_write('pw_c', '+I', ROW(1, -5, 'a', 1)::pw_c);
SELECT pk_write('pw_c', '+I', ROW(1, 5, NULL, 1)::pw_c);
SELECT pk_write('pw_c', '+U', ROW(1, -5, 'a', 1)::pw_c);
SELECT pk_write('pw_c', '+U', ROW(2, -5, 'a', 1)::pw_c);
SELECT pk_write('pw_c', '+U', ROW(2, 5, NULL, 1)::pw_c);
SELECT pk_write('pw_c', '+I', ROW(2, 5, 'a', -1)::pw_c);
SELECT pk_write('pw_c', '+I', ROW(NULL, 5, 'a', 1)::pw_c);
SELECT pk_write('pw_c', '-D', ROW(NULL, 5, 'a', 1)::pw_c);
SELECT * FROM pw_c;
SELECT count(*) AS snapshots FROM pk_snapshots('pw_c');

-- triggers fire once each, as for INSERT, INSERT ... ON CONFLICT DO UPDATE
-- and DELETE, with their OLD and NEW; the row stored is the one the
-- BEFORE triggers leave; rows a trigger writes to the same table are
-- recorded as its own statements say, pk_write's own with its RowKind
CREATE TABLE pw_t (k int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'input');
CREATE FUNCTION pw_show() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_LEVEL = 'STATEMENT' THEN
		RAISE NOTICE '% % %', TG_WHEN, TG_LEVEL, TG_OP;
		RETURN NULL;
	END IF;
	RAISE NOTICE '% % % OLD %  NEW %', TG_WHEN, TG_LEVEL, TG_OP,
		CASE WHEN TG_OP <> 'INSERT' THEN OLD::text END,
		CASE WHEN TG_OP <> 'DELETE' THEN NEW::text END;
	IF TG_OP = 'DELETE' THEN
		RETURN OLD;
	END IF;
	-- a marker value makes the BEFORE trigger change the row
	IF TG_WHEN = 'BEFORE' AND NEW.v = 1000 THEN
		NEW.v := 1001;
	END IF;
	-- and another writes a row of its own into the same table
	IF TG_WHEN = 'BEFORE' AND TG_OP = 'UPDATE' AND NEW.v = 2000 THEN
		INSERT INTO pw_t VALUES (NEW.k + 100, 1);
	END IF;
	-- or calls pk_write itself, while pk_write's statement runs
	IF TG_WHEN = 'BEFORE' AND TG_OP = 'INSERT' AND NEW.v = 3000 THEN
		PERFORM pk_write('pw_t', '+I', ROW(NEW.k + 200, 2)::pw_t);
		PERFORM pk_write('pw_t', '-U', ROW(NEW.k + 200, 2)::pw_t);
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER pw_before_stmt BEFORE INSERT OR UPDATE OR DELETE ON pw_t
	FOR EACH STATEMENT EXECUTE FUNCTION pw_show();
CREATE TRIGGER pw_before BEFORE INSERT OR UPDATE OR DELETE ON pw_t
	FOR EACH ROW EXECUTE FUNCTION pw_show();
CREATE TRIGGER pw_after AFTER INSERT OR UPDATE OR DELETE ON pw_t
	FOR EACH ROW EXECUTE FUNCTION pw_show();
SELECT pk_write('pw_t', '+I', ROW(1, 10)::pw_t);
SELECT pk_write('pw_t', '+U', ROW(1, 11)::pw_t);
SELECT pk_write('pw_t', '+U', ROW(2, 1000)::pw_t);
SELECT pk_write('pw_t', '+U', ROW(2, 2000)::pw_t);
SELECT pk_write('pw_t', '-U', ROW(1, 11)::pw_t);
SELECT pk_write('pw_t', '-D', ROW(7, 0)::pw_t);
SELECT pk_write('pw_t', '+I', ROW(4, 3000)::pw_t);
SELECT * FROM pw_t ORDER BY k;
-- the input stream: pk_write's RowKinds as given (no -U before its +U,
-- -U and -D with the row given, the -D of a key without a row kept), the
-- trigger's INSERT as an INSERT, the trigger's pk_writes as they say
SELECT snapshot_id, rowkind, "row" FROM pk_changes('pw_t');
-- the same writes in one transaction keep their order
SELECT max(snapshot_id) AS mark FROM pk_snapshots('pw_t') \gset
BEGIN;
SELECT pk_write('pw_t', '+U', ROW(3, 30)::pw_t);
SELECT pk_write('pw_t', '+U', ROW(3, 31)::pw_t);
SELECT pk_write('pw_t', '-U', ROW(3, 31)::pw_t);
SELECT pk_write('pw_t', '+I', ROW(3, 32)::pw_t);
COMMIT;
SELECT rowkind, "row" FROM pk_changes('pw_t', :mark);
-- a trigger that skips the row: nothing is written, nothing recorded
SELECT max(snapshot_id) AS mark FROM pk_snapshots('pw_t') \gset
CREATE FUNCTION pw_skip() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RETURN NULL;
END $$;
CREATE TRIGGER pw_skip BEFORE INSERT OR UPDATE OR DELETE ON pw_t
	FOR EACH ROW EXECUTE FUNCTION pw_skip();
SELECT pk_write('pw_t', '+U', ROW(3, 99)::pw_t);
SELECT pk_write('pw_t', '-D', ROW(3, 99)::pw_t);
SELECT * FROM pw_t WHERE k = 3;
SELECT count(*) AS changes_since FROM pk_changes('pw_t', :mark);

-- pk_write's statements follow the table's changes (they are prepared once
-- per table and RowKind: the text names the schema and the columns)
CREATE SCHEMA pw_s;
CREATE TABLE pw_s.d (k int PRIMARY KEY, v int) USING pkmerge
	WITH (changelog_producer = 'input');
SELECT pk_write('pw_s.d', '+I', ROW(1, 1)::pw_s.d);
SELECT pk_write('pw_s.d', '+U', ROW(1, 2)::pw_s.d);
SELECT pk_write('pw_s.d', '-D', ROW(1, 2)::pw_s.d);
ALTER TABLE pw_s.d ADD COLUMN w text;
SELECT pk_write('pw_s.d', '+I', ROW(2, 1, 'added')::pw_s.d);
ALTER TABLE pw_s.d RENAME COLUMN v TO vv;
SELECT pk_write('pw_s.d', '+U', ROW(2, 2, 'renamed column')::pw_s.d);
ALTER SCHEMA pw_s RENAME TO pw_s2;
SELECT pk_write('pw_s2.d', '+U', ROW(2, 3, 'renamed schema')::pw_s2.d);
ALTER TABLE pw_s2.d RENAME TO d2;
ALTER TABLE pw_s2.d2 DROP COLUMN vv;
SELECT pk_write('pw_s2.d2', '+U', ROW(2, 'dropped column')::pw_s2.d2);
SELECT pk_write('pw_s2.d2', '-D', ROW(2, 'dropped column')::pw_s2.d2);
SELECT rowkind, "row" FROM pk_changes('pw_s2.d2');
-- a statement that goes stale while it runs (a trigger's GRANT) is left to
-- finish; the trigger's own pk_write runs its statement unprepared
CREATE FUNCTION pw_s2.regrant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.w = 'regrant' THEN
		GRANT SELECT ON pw_s2.d2 TO PUBLIC;
		PERFORM pk_write('pw_s2.d2', '+I', ROW(NEW.k + 300, 'by the trigger')::pw_s2.d2);
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER regrant BEFORE INSERT ON pw_s2.d2 FOR EACH ROW EXECUTE FUNCTION pw_s2.regrant();
SELECT pk_write('pw_s2.d2', '+I', ROW(3, 'regrant')::pw_s2.d2);
SELECT pk_write('pw_s2.d2', '+I', ROW(4, 'prepared again')::pw_s2.d2);
SELECT * FROM pw_s2.d2 ORDER BY k;
DROP SCHEMA pw_s2 CASCADE;

-- row-level security: each role may change only its own rows
CREATE ROLE regress_pw_alice;
CREATE ROLE regress_pw_bob;
CREATE TABLE pw_r (k int PRIMARY KEY, owner name, v int) USING pkmerge
	WITH (changelog_producer = 'input');
ALTER TABLE pw_r ENABLE ROW LEVEL SECURITY;
CREATE POLICY pw_sel ON pw_r FOR SELECT USING (true);
CREATE POLICY pw_ins ON pw_r FOR INSERT WITH CHECK (owner = current_user);
CREATE POLICY pw_upd ON pw_r FOR UPDATE USING (owner = current_user)
	WITH CHECK (owner = current_user);
CREATE POLICY pw_del ON pw_r FOR DELETE USING (owner = current_user);
GRANT SELECT, INSERT, UPDATE, DELETE ON pw_r TO regress_pw_alice, regress_pw_bob;
INSERT INTO pw_r VALUES (1, 'regress_pw_alice', 10), (2, 'regress_pw_bob', 20);
SET ROLE regress_pw_bob;
-- the INSERT policy's WITH CHECK
SELECT pk_write('pw_r', '+I', ROW(3, 'regress_pw_alice', 30)::pw_r);
SELECT pk_write('pw_r', '+U', ROW(3, 'regress_pw_alice', 30)::pw_r);
-- replacing alice's row: the UPDATE policy's USING on the row replaced
SELECT pk_write('pw_r', '+U', ROW(1, 'regress_pw_bob', 11)::pw_r);
INSERT INTO pw_r VALUES (1, 'regress_pw_bob', 11)
	ON CONFLICT (k) DO UPDATE SET owner = EXCLUDED.owner, v = EXCLUDED.v;
-- which a plain INSERT (an upsert) would skip: refused
SELECT pk_write('pw_r', '+I', ROW(1, 'regress_pw_bob', 11)::pw_r);
INSERT INTO pw_r VALUES (1, 'regress_pw_bob', 11);
MERGE INTO pw_r USING (VALUES (1)) s(k) ON false
	WHEN NOT MATCHED THEN INSERT VALUES (1, 'regress_pw_bob', 11);
UPDATE pw_r SET k = 1 WHERE k = 2;
-- the DELETE policy's USING: alice's row is left alone, as by DELETE
SELECT pk_write('pw_r', '-D', ROW(1, 'regress_pw_bob', 0)::pw_r);
SELECT pk_write('pw_r', '-U', ROW(1, 'regress_pw_bob', 0)::pw_r);
DELETE FROM pw_r WHERE k = 1;
-- the UPDATE policy's WITH CHECK on the new row
SELECT pk_write('pw_r', '+U', ROW(2, 'regress_pw_alice', 21)::pw_r);
-- bob's own rows, and new keys
SELECT pk_write('pw_r', '+U', ROW(2, 'regress_pw_bob', 21)::pw_r);
SELECT pk_write('pw_r', '+I', ROW(4, 'regress_pw_bob', 40)::pw_r);
INSERT INTO pw_r VALUES (5, 'regress_pw_bob', 50);
SELECT pk_write('pw_r', '-U', ROW(4, 'regress_pw_bob', 40)::pw_r);
SELECT pk_write('pw_r', '-D', ROW(6, 'regress_pw_bob', 60)::pw_r);
-- an INSERT over one's own row is refused too (it is an update)
INSERT INTO pw_r VALUES (5, 'regress_pw_bob', 51);
INSERT INTO pw_r VALUES (5, 'regress_pw_bob', 51)
	ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;
UPDATE pw_r SET k = 7 WHERE k = 5;
RESET ROLE;
SELECT * FROM pw_r ORDER BY k;
SELECT snapshot_id, rowkind, "row" FROM pk_changes('pw_r');
SELECT snapshot_id, commit_kind, delta_record_count, changelog_record_count
FROM pk_snapshots('pw_r');
-- the table's owner is not bound by the policies: INSERT is an upsert
INSERT INTO pw_r VALUES (1, 'regress_pw_bob', 12);
SELECT * FROM pw_r WHERE k = 1;

-- +U sets every column, the key's too (the record replaces the row whole,
-- equal_keys.sql): a role that may update only the other columns may not
-- write it
CREATE TABLE pw_k (k numeric PRIMARY KEY, v int) USING pkmerge;
INSERT INTO pw_k VALUES (1, 1);
GRANT SELECT, INSERT, UPDATE (v) ON pw_k TO regress_pw_bob;
SET ROLE regress_pw_bob;
SELECT pk_write('pw_k', '+U', ROW(1.0, 2)::pw_k);
RESET ROLE;
GRANT UPDATE (k) ON pw_k TO regress_pw_bob;
SET ROLE regress_pw_bob;
SELECT pk_write('pw_k', '+U', ROW(1.0, 2)::pw_k);
RESET ROLE;
SELECT * FROM pw_k;
-- a GENERATED ALWAYS identity column cannot be set by an update: a table
-- of nothing else takes no +U
CREATE TABLE pw_id (k int GENERATED ALWAYS AS IDENTITY PRIMARY KEY) USING pkmerge;
SELECT pk_write('pw_id', '+I', ROW(1)::pw_id);
SELECT pk_write('pw_id', '+U', ROW(1)::pw_id);
SELECT * FROM pw_id;

DROP TABLE pw_c, pw_t, pw_r, pw_k, pw_id;
DROP FUNCTION pw_show(), pw_skip();
DROP DOMAIN pw_positive;
DROP ROLE regress_pw_alice, regress_pw_bob;
