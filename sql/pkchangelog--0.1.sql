/* pkchangelog 0.1: catalog schema and SQL surface */

\echo Use "CREATE EXTENSION pkchangelog" to load this file. \quit

-- The catalog lives in its own schema whatever schema the extension's
-- functions are created in, so tools can find it by name.
CREATE SCHEMA pkchangelog;
REVOKE ALL ON SCHEMA pkchangelog FROM PUBLIC;
GRANT USAGE ON SCHEMA pkchangelog TO PUBLIC;

-- The library's version.  Creating (and calling) it loads the library, so a
-- server without shared_preload_libraries = 'pkchangelog' fails here, at
-- CREATE EXTENSION, with the error and hint of _PG_init.
CREATE FUNCTION pkchangelog.library_version() RETURNS text
	AS 'MODULE_PATHNAME', 'pk_library_version'
	LANGUAGE C STRICT IMMUTABLE;
DO $$
BEGIN
	IF pkchangelog.library_version() <> '0.1' THEN
		RAISE EXCEPTION 'pkchangelog library version % does not match SQL script version 0.1',
			pkchangelog.library_version();
	END IF;
END $$;
