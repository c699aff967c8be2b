# pkchangelog: PGXS build plus the project's own test, demo and bench drivers.
#
#   make            build pkchangelog.so (warnings are errors)
#   make install    install into the PostgreSQL found by $(PG_CONFIG)
#   make test       install packages if needed, build, install, run every test
#   make demo       run test/demo/*.sql on a throwaway cluster
#   make bench      print pkmerge figures beside heap (not a pass/fail test)
#   make check-debug  the tests under an assert-enabled PostgreSQL, with
#                   debug_discard_caches and valgrind (slow; not in make test)

EXTENSION = pkchangelog
MODULE_big = pkchangelog
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
DATA = sql/pkchangelog--0.1.sql
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

# pg_regress/isolation/TAP are driven by test/run-tests.sh, not PGXS's
# installcheck: the tests need temporary instances with the library
# preloaded, run as an unprivileged user.
NO_INSTALLCHECK = 1

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
	@{ echo '{ global:'; echo '  Pg_magic_func; _PG_init;'; \
	   sed -n 's/^PG_FUNCTION_INFO_V1(\([a-z_0-9]*\));/  \1; pg_finfo_\1;/p' $^; \
	   sed -n 's/^PGDLLEXPORT [a-z]* \([a-z_0-9]*\)(.*/  \1;/p' $^; \
	   echo 'local: *; };'; } > $@

.PHONY: test demo bench deps check-debug

deps:
	@bash test/setup-deps.sh

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
