/* pkchangelog 0.13 -> 0.14: btree's operator classes on the key indexes */

\echo Use "ALTER EXTENSION pkchangelog UPDATE TO '0.14'" to load this file. \quit

DO $$
BEGIN
	IF NOT pkchangelog.library_accepts('0.14') THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.14',
			pkchangelog.library_version();
	END IF;
END $$;

-- A pkmerge table's primary key (a pkmerge_key index) takes btree's
-- operator classes in place of the extension's copies of them: the same
-- operators, and PostgreSQL then accepts the key as the referenced key of
-- a foreign key.  Key indexes made from 0.14 on get them when built.
CREATE FUNCTION pkchangelog.key_index_btree_opclasses(regclass) RETURNS void
	AS 'MODULE_PATHNAME', 'pk_key_index_btree_opclasses'
	LANGUAGE C STRICT;
SELECT pkchangelog.key_index_btree_opclasses(c.oid)
FROM pg_catalog.pg_class c
WHERE c.relam = (SELECT a.oid FROM pg_catalog.pg_am a WHERE a.amname = 'pkmerge_key');
DROP FUNCTION pkchangelog.key_index_btree_opclasses(regclass);
