# pkchangelog: PGXS build plus the project's own test, demo and bench drivers.
#
#   make            build pkchangelog.so (warnings are errors)
#   make install    install into the PostgreSQL found by $(PG_CONFIG)
#   make test       install packages if needed, build, install, run every test
#                   on temporary servers (test/run-tests.sh)
#   make installcheck  run the tests against the running server found by
#                   PGHOST/PGPORT, which must preload the library (see below)
#   make demo       build, install, run test/demo/*.sql on a throwaway cluster
#   make bench      print pkmerge figures beside heap (not a pass/fail test)
#   make fuzz       randomized differential test against heap twins
#                   (SEED=n MINUTES=m; prints a minimal reproduction on failure)
#   make check-debug  the tests under an assert-enabled PostgreSQL, with
#                   debug_discard_caches and valgrind (slow; not in make test)

EXTENSION = pkchangelog
MODULE_big = pkchangelog
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
# The base script and the update scripts (doc/DECISIONS.md, "Upgrades")
DATA = $(wildcard sql/pkchangelog--*.sql)
PGFILEDESC = "pkchangelog - merge-tree primary-key tables with complete changelogs"

PG_CONFIG ?= pg_config
# JIT bitcode is not needed and doubles build time
override with_llvm = no
PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Werror -Wmissing-prototypes -Wpointer-arith -Wendif-labels
# Only the entry points PostgreSQL looks up are exported (the backend loads
# libraries with RTLD_GLOBAL, where a name such as scan_begin could collide
# with another library's): _PG_init, the module magic, every function of
# PG_FUNCTION_INFO_V1 with its info function, and the background workers'
# PGDLLEXPORT main functions.  The list is made from the sources.
SHLIB_LINK = -lzstd -Wl,--version-script=pkchangelog.exports
EXTRA_CLEAN = pkchangelog.exports

# Tests, in PGXS's layout: pg_regress suites in test/sql with their output
# in test/expected (run in this order; each loads what it needs, so any one
# runs alone: make installcheck REGRESS=stream), isolation specs in
# test/isolation, TAP tests in test/t.  "make installcheck" runs the suites
# against the running server at PGHOST/PGPORT, which must have the library
# in shared_preload_libraries (test/pg_test.conf holds the settings the
# tests assume), and the TAP tests on servers of their own; run it as the
# user that owns this directory (not root).  "make test" runs the same
# lists on temporary servers.
REGRESS = extension readme ddl_options ddl_keys dml on_conflict savepoints \
	explain parallel snapshots storage errors changelog_checker rewrites \
	key_updates producers stream consume prepared materialize materialize_random decoding monitoring expiration stats compaction \
	vacuum_full spill pk_write equal_keys privileges run_memory
REGRESS_OPTS = --inputdir=$(srcdir)/test --load-extension=pkchangelog \
	--temp-config=$(srcdir)/test/pg_test.conf
ISOLATION = $(sort $(basename $(notdir $(wildcard $(srcdir)/test/isolation/specs/*.spec))))
ISOLATION_OPTS = --inputdir=$(srcdir)/test/isolation --load-extension=pkchangelog \
	--temp-config=$(srcdir)/test/pg_test.conf
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl
PROVE_FLAGS = -I test/t
# the TAP tests' servers take the same settings
installcheck: export TEMP_CONFIG ?= $(abspath $(srcdir)/test/pg_test.conf)

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifeq ($(PGXS),)
# Without pg_config nothing can be built; "make test" and "make demo" first
# install the packages that provide it.
all install:
	@echo "pg_config not found: run 'make test' as root (installs postgresql-server-dev-15) or set PG_CONFIG" >&2; exit 1
else
include $(PGXS)
endif

# PGXS tracks no header dependencies: any header change rebuilds every object
$(OBJS): $(wildcard src/*.h)

$(shlib): pkchangelog.exports
pkchangelog.exports: $(wildcard src/*.c)
	@{ echo '{ global:'; echo '  Pg_magic_func; _PG_init; _PG_output_plugin_init;'; \
	   sed -n 's/^PG_FUNCTION_INFO_V1(\([a-z_0-9]*\));/  \1; pg_finfo_\1;/p' $^; \
	   sed -n 's/^PGDLLEXPORT [a-z]* \([a-z_0-9]*\)(.*/  \1;/p' $^; \
	   echo 'local: *; };'; } > $@

.PHONY: test demo bench fuzz deps test-lists freeze-baseline check-debug

# the lists above, for test/run-tests.sh
test-lists:
	@echo "REGRESS='$(REGRESS)'"
	@echo "ISOLATION='$(ISOLATION)'"

deps:
	@bash test/setup-deps.sh

# The base script as released, which t/025_upgrade.pl installs and
# updates: frozen once, at the release of its version; afterwards a
# catalog change is an update script (README, "Upgrading").
freeze-baseline:
	cp sql/pkchangelog--0.1.sql test/upgrade/

test: deps
	@PG_CONFIG="$(PG_CONFIG)" bash test/run-tests.sh

demo: deps
	@PG_CONFIG="$(PG_CONFIG)" bash test/demo.sh

bench: deps
	@PG_CONFIG="$(PG_CONFIG)" bash test/bench.sh

# Builds (or reuses) an assert-enabled PostgreSQL 15 in $(PG_DEBUG_PREFIX)
# and installs into it, whatever PG_CONFIG says.
PG_DEBUG_PREFIX ?= /opt/pg-assert
check-debug:
	@PG_DEBUG_PREFIX="$(PG_DEBUG_PREFIX)" bash test/debug-build.sh $(CHECKS)

fuzz: deps
	@PG_CONFIG="$(PG_CONFIG)" SEED="$(SEED)" MINUTES="$(MINUTES)" bash test/fuzz.sh
