# pkchangelog: PGXS build plus the project's own test, demo and bench drivers.
#
#   make            build pkchangelog.so (warnings are errors)
#   make install    install into the PostgreSQL found by $(PG_CONFIG)
#   make test       install packages if needed, build, install, run every test
#                   on temporary servers (test/run-tests.sh); PG=18 against
#                   PostgreSQL 18, built once from Debian's source package
#                   (test/pg-build.sh; so do make demo and make bench)
#   make installcheck  run the tests against the running server found by
#                   PGHOST/PGPORT, configured as the README's "Installing" says
#   make demo       build, install, run test/demo/*.sql on a throwaway cluster
#   make bench      print pkmerge figures beside heap (not a pass/fail test)
#   make fuzz       randomized differential test against heap twins
#                   (SEED=n MINUTES=m; prints a minimal reproduction on failure)
#   make check-debug  the tests under an assert-enabled PostgreSQL, with
#                   debug_discard_caches and valgrind (slow; not in make test)
#   make dist       pkchangelog-VERSION.zip for PGXN (the committed tree)
#   make deb        postgresql-15-pkchangelog_VERSION_ARCH.deb (debian/)

EXTENSION = pkchangelog
MODULE_big = pkchangelog
# The source tree: this Makefile's directory, also when a packager builds in
# another one (pg_buildext: make -C build-15 -f ../Makefile VPATH=..)
pk_srcdir := $(patsubst %/,%,$(dir $(firstword $(MAKEFILE_LIST))))
pk_sources := $(sort $(wildcard $(pk_srcdir)/src/*.c))
OBJS = $(patsubst $(pk_srcdir)/%.c,%.o,$(pk_sources))
# The base script and the update scripts (doc/DECISIONS.md, "Upgrades and
# catalog versions")
DATA = $(patsubst $(pk_srcdir)/%,%,$(wildcard $(pk_srcdir)/sql/pkchangelog--*.sql))
PGFILEDESC = "pkchangelog - merge-tree primary-key tables with complete changelogs"
# the extension's version, which the control file holds
PK_DEFAULT_VERSION := $(shell sed -n "s/^default_version = '\([0-9.]*\)'$$/\1/p" $(pk_srcdir)/pkchangelog.control)

PG_CONFIG ?= pg_config
# JIT bitcode is not needed and doubles build time
override with_llvm = no
# src/ of the build directory first: version.h is made there
PG_CPPFLAGS = -Isrc -I$(srcdir)/src
PG_CFLAGS = -Wall -Werror -Wmissing-prototypes -Wpointer-arith -Wendif-labels
# Only the entry points PostgreSQL looks up are exported (the backend loads
# libraries with RTLD_GLOBAL, where a name such as scan_begin could collide
# with another library's): _PG_init, the module magic, every function of
# PG_FUNCTION_INFO_V1 with its info function, and the background workers'
# PGDLLEXPORT main functions.  The list is made from the sources.
SHLIB_LINK = -lzstd -Wl,--version-script=pkchangelog.exports
EXTRA_CLEAN = pkchangelog.exports src/version.h

# Tests, in PGXS's layout: pg_regress suites in sql/ (beside the extension
# scripts) with their output in expected/, run in this order (each loads
# what it needs, so any one runs alone: make installcheck REGRESS=stream);
# isolation specs in test/isolation; TAP tests in test/t.  "make
# installcheck" runs the suites against the running server at PGHOST/PGPORT,
# which must be configured as the README's "Installing" section says, and
# the TAP tests on servers of their own, unless run as root (initdb refuses
# root; "make test" runs them itself as another user).  "make test" runs
# the same lists on temporary servers.
REGRESS = extension readme ddl_options ddl_keys dml on_conflict savepoints \
	explain parallel snapshots storage errors changelog_checker rewrites \
	key_updates producers stream consume prepared materialize materialize_random decoding monitoring expiration stats compaction \
	vacuum_full spill pk_write equal_keys privileges run_memory indexes unique foreign_keys
REGRESS_OPTS = --inputdir=$(srcdir) --load-extension=pkchangelog
# The specs that prepare transactions run where the server allows them
# (max_prepared_transactions > 0; 0 is PostgreSQL's default): make
# installcheck asks the server and says when it leaves them out, as
# PostgreSQL's own installcheck-prepared-txns does for its specs.
ISOLATION_PREPARED = commit_lock_holders fk_prepared index_vacuum lookup_before_lock planner_estimates prepared_commit unique_prepared
ISOLATION_ALL = $(sort $(basename $(notdir $(wildcard $(srcdir)/test/isolation/specs/*.spec))))
ISOLATION = $(if $(PK_NO_PREPARED),$(filter-out $(ISOLATION_PREPARED),$(ISOLATION_ALL)),$(ISOLATION_ALL))
ISOLATION_OPTS = --inputdir=$(srcdir)/test/isolation --load-extension=pkchangelog
ifneq ($(shell id -u),0)
TAP_TESTS = 1
endif
PROVE_TESTS = test/t/*.pl
PROVE_FLAGS = -I test/t
# the TAP tests' servers take the settings they assume
installcheck: export TEMP_CONFIG ?= $(abspath $(srcdir)/test/pg_test.conf)
installcheck: PK_NO_PREPARED = $(shell $(bindir)/psql -XAtqc "SELECT 1 WHERE current_setting('max_prepared_transactions')::int = 0" postgres 2>/dev/null)

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifeq ($(PGXS),)
# Without pg_config nothing can be built; "make test" and "make demo" first
# install the packages that provide it.
all install:
	@echo "pg_config not found: run 'make test' as root (installs postgresql-server-dev-15) or set PG_CONFIG" >&2; exit 1
else
include $(PGXS)
endif

installcheck: installcheck-prepared-note
.PHONY: installcheck-prepared-note
installcheck-prepared-note:
	@$(if $(PK_NO_PREPARED),echo "max_prepared_transactions = 0 on this server: isolation specs $(ISOLATION_PREPARED) left out; suite prepared ends at its start (expected/prepared_1.out)",true)

# PGXS tracks no header dependencies: any header change rebuilds every object
$(OBJS): $(wildcard $(pk_srcdir)/src/*.h)
# a build in another directory makes its src/ for the objects
$(OBJS): | $(CURDIR)/src
$(CURDIR)/src:
	mkdir -p $@

# The extension's version lives in the control file: version.h carries
# it, and every catalog version the library works with (catalog.c): those
# the scripts in sql/ are named for, the base and each update's ends.
$(OBJS): src/version.h
src/version.h: $(pk_srcdir)/pkchangelog.control $(addprefix $(pk_srcdir)/,$(DATA)) | $(CURDIR)/src
	@{ echo '/* made by the Makefile from pkchangelog.control and sql/; not in git */'; \
	   echo '#ifndef PK_VERSION_H'; echo '#define PK_VERSION_H'; \
	   echo '#define PKCHANGELOG_VERSION "$(PK_DEFAULT_VERSION)"'; \
	   printf '#define PKCHANGELOG_CATALOG_VERSIONS'; \
	   for v in $$(echo $(notdir $(DATA)) | tr ' ' '\n' | sed 's/^pkchangelog--//; s/\.sql$$//; s/--/\n/' | sort -uV); do \
	     printf ' "%s",' "$$v"; done | sed 's/,$$//'; echo; echo '#endif'; } > $@

$(shlib): pkchangelog.exports
pkchangelog.exports: $(pk_sources)
	@{ echo '{ global:'; echo '  Pg_magic_func; _PG_init; _PG_output_plugin_init;'; \
	   sed -n 's/^PG_FUNCTION_INFO_V1(\([a-z_0-9]*\));/  \1; pg_finfo_\1;/p' $^; \
	   sed -n 's/^PGDLLEXPORT [a-z]* \([a-z_0-9]*\)(.*/  \1;/p' $^; \
	   echo 'local: *; };'; } > $@

.PHONY: test demo bench fuzz deps test-lists freeze-baseline check-debug dist deb

# the lists above, for test/run-tests.sh
test-lists:
	@echo "REGRESS='$(REGRESS)'"
	@echo "ISOLATION='$(ISOLATION_ALL)'"
	@echo "ISOLATION_PREPARED='$(ISOLATION_PREPARED)'"

deps:
	@bash test/setup-deps.sh

# The base script as released, which t/025_upgrade.pl installs and
# updates: frozen once, at the release of its version; afterwards a
# catalog change is an update script (README, "Upgrading").
freeze-baseline:
	cp sql/pkchangelog--0.1.sql test/upgrade/

test: deps
	@PG="$(PG)" PG_CONFIG="$(PG_CONFIG)" bash test/run-tests.sh

# The version as a Semantic Version (META.json, debian/changelog): the
# control file's default_version with its patch level
PK_VERSION = $(PK_DEFAULT_VERSION).0

# The distribution PGXN takes: the committed tree, under pkchangelog-VERSION/
dist:
	git -C $(pk_srcdir) archive --format zip --prefix=pkchangelog-$(PK_VERSION)/ \
		-o $(CURDIR)/pkchangelog-$(PK_VERSION).zip HEAD

# The Debian package (debian/, pg_buildext): postgresql-15-pkchangelog_*.deb
# in this directory
deb:
	@DEB_OUT="$(CURDIR)" bash $(pk_srcdir)/test/build-deb.sh

demo: deps
	@PG="$(PG)" PG_CONFIG="$(PG_CONFIG)" bash test/demo.sh

bench: deps
	@PG="$(PG)" PG_CONFIG="$(PG_CONFIG)" bash test/bench.sh

# Builds (or reuses) an assert-enabled PostgreSQL 15 in $(PG_DEBUG_PREFIX)
# and installs into it, whatever PG_CONFIG says.
PG_DEBUG_PREFIX ?= /opt/pg-assert
check-debug:
	@PG_DEBUG_PREFIX="$(PG_DEBUG_PREFIX)" bash test/debug-build.sh $(CHECKS)

fuzz: deps
	@PG="$(PG)" PG_CONFIG="$(PG_CONFIG)" SEED="$(SEED)" MINUTES="$(MINUTES)" bash test/fuzz.sh
