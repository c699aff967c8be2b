# 004_layers.pl: src/ depends one way.  From the built objects' symbol
# tables (nm), every call or reference from one source file to a function
# or variable another defines is an edge; the graph must have no cycle, so
# that each file's callers are above it (doc/developing.md,
# "Architecture").  Needs no server; runs on the objects the build left in
# src/.  Also: one relcache callback slot for the whole library, and no
# version test outside src/pg_compat.h.
use strict;
use warnings;
use FindBin;
use Test::More;

my $src = "$FindBin::Bin/../../src";
my @objects = sort glob("$src/*.o");
ok(scalar(@objects) >= 20, 'the objects of src/ are built')
  or BAIL_OUT("no objects in $src: build first");

my (%defined_in, %undefined);
for my $o (@objects)
{
	my ($file) = $o =~ m{([^/]+)\.o$};
	open my $nm, '-|', 'nm', $o or die "cannot run nm: $!";
	while (my $line = <$nm>)
	{
		if ($line =~ /^[0-9a-f]+ [TDBR] (\S+)$/)
		{
			$defined_in{$1} = $file;
		}
		elsif ($line =~ /^\s+U (\S+)$/)
		{
			push @{ $undefined{$file} }, $1;
		}
	}
	close $nm;
}

my %edges;
for my $file (keys %undefined)
{
	for my $sym (@{ $undefined{$file} })
	{
		my $to = $defined_in{$sym};
		$edges{$file}{$to} = $sym if defined $to && $to ne $file;
	}
}

# depth-first search; a back edge closes a cycle, which is reported
my (%state, @path, @cycles);
sub visit
{
	my ($v) = @_;
	$state{$v} = 1;
	push @path, $v;
	for my $w (sort keys %{ $edges{$v} || {} })
	{
		if (($state{$w} // 0) == 1)
		{
			my @from = @path;
			shift @from while $from[0] ne $w;
			push @cycles, join(' -> ', @from, $w) . " ($edges{$v}{$w})";
		}
		visit($w) unless $state{$w};
	}
	pop @path;
	$state{$v} = 2;
}
visit($_) for sort map { m{([^/]+)\.o$} } @objects;

is(join("\n", @cycles), '', 'no source file calls back into a file that calls it');
ok(scalar(keys %edges) >= 20, 'the graph has the calls between files');

# Includes run one way too: a file (its .c or its .h) includes only the
# headers of the files below it, so that no header of a lower layer needs
# one of a higher layer (src/X.c and src/X.h are one node X).  The calls
# above and the includes together must have no cycle.
my %incl;
for my $f (sort glob("$src/*.c"), sort glob("$src/*.h"))
{
	my ($from) = $f =~ m{([^/]+)\.[ch]$};
	open my $fh, '<', $f or die "cannot read $f: $!";
	while (my $line = <$fh>)
	{
		next unless $line =~ /^#include "([a-z_0-9]+)\.h"/;
		my $to = $1;
		next if $to eq $from || $to eq 'postgres' || !-e "$src/$to.h";
		$incl{$from}{$to} = "#include \"$to.h\"";
	}
	close $fh;
}
ok(scalar(keys %incl) >= 20, 'the graph has the includes between files');
for my $from (keys %incl)
{
	$edges{$from}{$_} //= $incl{$from}{$_} for keys %{ $incl{$from} };
}
(%state, @path, @cycles) = ();
visit($_) for sort keys %edges;
is(join("\n", @cycles), '', 'no include or call runs from a lower file up to one that uses it');

# A backend has ten relcache callback slots for core and every library
# together: the library takes one (relcache_hub.c), whatever its parts need.
my @relcache_callers = sort grep {
	grep { $_ eq 'CacheRegisterRelcacheCallback' } @{ $undefined{$_} }
} keys %undefined;
is(join(' ', @relcache_callers), 'relcache_hub',
	'only relcache_hub registers a relcache callback with PostgreSQL');

# The PostgreSQL majors the library builds against differ in one header:
# no other file asks which major it is built for.
my @version_tests;
for my $f (sort glob("$src/*.c"), sort glob("$src/*.h"))
{
	next if $f =~ m{/pg_compat\.h$};
	open my $fh, '<', $f or die "cannot read $f: $!";
	while (my $line = <$fh>)
	{
		push @version_tests, "$f:$.: $line" if $line =~ /PG_VERSION_NUM|PG_MAJORVERSION/;
	}
	close $fh;
}
is(join('', @version_tests), '', 'only src/pg_compat.h tests the PostgreSQL version');

done_testing();
