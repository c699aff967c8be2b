# PkFuzz::Gen: the tables of a run and the random transactions against
# them, as SQL text: each logical operation once for the pkmerge table and
# once for its heap twin.  Generation depends on the seed only, never on
# what the server answered, so a seed always gives the same transactions
# and any subset of them can be replayed (see PkFuzz.pm for the design).
# Six key shapes: int, comp (two columns, one COLLATE "C"), text (ICU
# en-US), num (numeric scales), ci (text under the nondeterministic,
# case-insensitive ICU collation ci) and float (float8: 0 and -0, NaN,
# infinities); the last three have keys equal but not identical, which
# key_id treats as one key (the tables compare their exact text).
package PkFuzz::Gen;

use strict;
use warnings;
use feature 'unicode_strings';
use Digest::MD5 qw(md5_hex);
use PkFuzz::Rng;

our @PRODUCERS = ('none', 'input', 'lookup', 'full-compaction');
our @SHAPES    = ('int', 'comp', 'text', 'num', 'ci', 'float');

# the nondeterministic collation of the ci shape's key: case-insensitive
# ('a' = 'A', U+01C5 = U+01C6), accent-sensitive (e-acute <> 'e'), sharp
# s <> 'ss'
our $CI_COLLATION = "CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)";

# Table shapes: columns in declaration order (the key is not always first
# nor in declaration order), each with its value type: int, text (the
# database's default collation, ICU en-US), ctext (COLLATE "C"), num,
# ci (text COLLATE ci), float (float8).
my %SHAPE = (
	int => {
		cols => [ [ k => 'int' ], [ g => 'int' ], [ v => 'text' ], [ n => 'num' ] ],
		key  => ['k'],
	},
	comp => {
		cols => [ [ g => 'int' ], [ b => 'int' ], [ a => 'ctext' ], [ v => 'text' ] ],
		key  => [ 'a', 'b' ],
	},
	text => {
		cols => [ [ s => 'text' ], [ g => 'int' ], [ v => 'text' ] ],
		key  => ['s'],
	},
	num => {
		cols => [ [ v => 'text' ], [ k => 'num' ], [ g => 'int' ] ],
		key  => ['k'],
	},
	ci => {
		cols => [ [ v => 'text' ], [ g => 'int' ], [ s => 'ci' ] ],
		key  => ['s'],
	},
	float => {
		cols => [ [ k => 'float' ], [ v => 'text' ], [ g => 'int' ] ],
		key  => ['k'],
	},
);

my %SQLTYPE = (int => 'int', text => 'text', ctext => 'text', num => 'numeric', ci => 'text', float => 'float8');

# text keys: case, accents and multi-letter orderings that ICU and "C" sort
# differently, the empty string, spaces and punctuation
my @TEXT_KEYS = ('a', 'A', 'b', 'B', 'c', 'C', "\x{e9}", 'e', 'E', 'f', 'g',
	"\x{e4}", 'z', 'Z', 'ab', 'aB', 'Ab', "\x{df}", 'ss', "r\x{e9}sum\x{e9}",
	'resume', 'x1', 'x10', 'x2', "\x{c6}", 'ae', ' a', 'a b', '', 'a-b', 'a_b');
my @COMP_A = ('a', 'b', 'B', 'c', '', 'ab');
# ci keys: case variants of one key (one key under ci, as many rows under
# the default collation), accents that stay distinct at level 2 (e-acute
# and 'e'), sharp s (its upper() is 'SS', one key with 'ss'), the
# titlecase digraph U+01C5 (one key with U+01C4, U+01C6), spaces and
# punctuation, and the
# bulk keys' forms 'w' || i and 'W' || i.  Only values whose equality
# under ci is Perl's lc equality (checked once against ICU): no control
# characters (ignorable at level 2), no dotted capital I.
my @CI_KEYS = ('a', 'A', 'b', 'B', 'ab', 'aB', 'Ab', 'AB', 'x1', 'X1', 'x10', 'X10', "\x{e9}", "\x{c9}", 'e', 'E',
	"\x{df}", 'ss', 'SS', 'Ss', "\x{1e9e}", "\x{e6}", "\x{c6}", 'ae', 'AE', "\x{1c6}", "\x{1c5}", "\x{1c4}",
	"r\x{e9}sum\x{e9}", "R\x{c9}SUM\x{c9}", 'resume', 'Resume', "\x{f1}", "\x{d1}", 'n', 'a b', 'A B', 'a_b', '',
	'w1', 'W1', 'w10', 'W10', 'w150', 'W150');
# float keys other than multiples of 0.25: both zeros, NaN (one key,
# above every other), the infinities, tiny values
my @FLOAT_SPECIAL = ('0', '-0', '0', '-0', '-0.0', 'NaN', 'NaN', 'Infinity', '-Infinity', '1e-300', '-1e-300',
	'5e-324');
my @SPECIAL_TEXT = ('', ' ', "tab\there", "new\nline", 'back\\slash', "quote'q",
	"\x{fc}n\x{ef}c\x{f8}d\x{e9}", '\\N', 'NULL');

sub new
{
	my ($class, %o) = @_;
	my $g = bless {
		rng    => PkFuzz::Rng->new($o{seed}),
		seed   => $o{seed},
		avoid  => $o{avoid} // {},
		ntxn   => 0,
		sp     => 0,
	}, $class;
	# parallel runs share one set of tables (table_seed) and differ in
	# their transactions
	my $tr = $g->{rng};
	$g->{rng} = PkFuzz::Rng->new($o{table_seed}) if defined $o{table_seed} && $o{table_seed} != $o{seed};
	$g->{tables} = $g->make_tables;
	$g->{rng} = $tr;
	return $g;
}

# ---------------------------------------------------------------- tables

# Eight pkmerge tables, two per producer (t<i>: producer i % 4): t0..t5
# take the six shapes in an order drawn from the seed, t6 and t7 two
# shapes drawn from it; options drawn from the seed too; each with a heap
# twin whose primary key is DEFERRABLE (a statement that moves keys over
# each other is checked at its end, as the contract wants pkmerge to act
# on the set of rows it matched).
sub make_tables
{
	my ($g) = @_;
	my $r = $g->{rng};
	my @shapes = $r->shuffle(@SHAPES);
	push @shapes, $r->pick(\@SHAPES), $r->pick(\@SHAPES);
	my @t;
	for my $i (0 .. 7)
	{
		my $prod = $PRODUCERS[ $i % 4 ];
		my $shape = $shapes[$i];
		my $sh = $SHAPE{$shape};
		my %opt = (changelog_producer => $prod);
		$opt{write_buffer_size} = '1MB' if $r->chance(0.5);
		$opt{changelog_row_deduplicate} = 'true'
		  if $prod =~ /lookup|full/ && $r->chance(0.5);
		$opt{num_sorted_run_compaction_trigger} = $r->pick([ 2, 3, 5 ]);
		$opt{num_sorted_run_stop_trigger} = $opt{num_sorted_run_compaction_trigger} + $r->between(1, 3)
		  if $r->chance(0.5);
		$opt{full_compaction_delta_commits} = $r->pick([ 1, 3, 10 ]) if $prod eq 'full-compaction';
		$opt{target_run_size} = '64kB' if $r->chance(0.3);
		$opt{compression} = 'none' if $r->chance(0.15);
		$opt{compression_level} = $r->pick([ -7, 1, 3 ]) if !$opt{compression} && $r->chance(0.2);
		if ($r->chance(0.3))
		{
			# short retention: only the newest 30 snapshots stay
			$opt{snapshot_time_retained} = '0';
			$opt{snapshot_num_retained_min} = 30;
			$opt{snapshot_num_retained_max} = 30;
		}
		my @cols = map { { name => $_->[0], type => $_->[1], key => 0 } } @{ $sh->{cols} };
		my %bykey = map { $_ => 1 } @{ $sh->{key} };
		$_->{key} = $bykey{ $_->{name} } ? 1 : 0 for @cols;
		push @t, {
			idx    => $i,
			name   => "t$i",
			heap   => "h$i",
			shape  => $shape,
			prod   => $prod,
			# a unique constraint on (v, g): every other table (those
			# without keep ON CONFLICT without a target, which a
			# deferrable constraint refuses as an arbiter, and values of
			# v too long for a btree entry)
			unique => $i % 2,
			# a table of references to its rows (%T_f) on every other
			# table (the others: the unique constraint, whose deferred check
			# and the references' would fire in an order of their own)
			fk     => 1 - $i % 2,
			opts   => \%opt,
			cols   => \@cols,
			key    => $sh->{key},
			nonkey => [ map { $_->{name} } grep { !$_->{key} } @cols ],
			type   => { map { $_->{name} => $_->{type} } @cols },
		};
	}
	return \@t;
}

sub col_ddl
{
	my ($c) = @_;
	my $d = "$c->{name} $SQLTYPE{$c->{type}}";
	$d .= ' COLLATE "C"' if $c->{type} eq 'ctext';
	$d .= ' COLLATE ci' if $c->{type} eq 'ci';
	$d .= ' DEFAULT 7 CHECK (g > -1000000)' if $c->{name} eq 'g';
	return $d;
}

# CREATE TABLE statements of table $t: (pkmerge, heap twin), then the
# same secondary indexes on both (btree on g, and on an expression of v;
# the queries check them, PkFuzz::Engine::queries); on every other table a
# unique constraint on (v, g), checked at the end of each statement
# (DEFERRABLE, as the twin's key: heap checks a non-deferrable one row by
# row, in its own order); on the others a table of references to its keys,
# %T_f: a foreign key ON DELETE CASCADE to the pkmerge table, and for the
# heap twin, whose deferrable key a foreign key cannot reference, triggers
# that do what PostgreSQL's foreign key triggers do (fk_sql)
sub create_sql
{
	my ($t) = @_;
	my $cols = join(', ', map { col_ddl($_) } @{ $t->{cols} });
	my $key = join(', ', @{ $t->{key} });
	my $with = join(', ', map {
		my $v = $t->{opts}{$_};
		"$_ = " . ($v =~ /^-?\d+$|^true$/ ? $v : "'$v'")
	} sort keys %{ $t->{opts} });
	return (
		"CREATE TABLE $t->{name} ($cols, PRIMARY KEY ($key)) USING pkmerge WITH ($with)",
		"CREATE TABLE $t->{heap} ($cols, PRIMARY KEY ($key) DEFERRABLE)",
		(map {
			("CREATE INDEX $_->[0]_g ON $_->[0] (g)", "CREATE INDEX $_->[0]_v ON $_->[0] (left(v, 12), g)",
				$t->{unique} ? ("ALTER TABLE $_->[0] ADD CONSTRAINT $_->[0]_vg UNIQUE (v, g) DEFERRABLE") : ())
		} ([ $t->{name} ], [ $t->{heap} ])),
		($t->{fk} ? fk_sql($t) : ()));
}

# the tables of references: the pkmerge table's has the foreign key; the
# twin's has triggers doing what the key's triggers do at the end of each
# statement: a reference needs a row of its key (23503); a delete of a row
# deletes its references; an update of a row's key (to one not equal) with
# references fails (23503, NO ACTION) unless another row holds the old key
sub fk_sql
{
	my ($t) = @_;
	my %iskey = map { $_ => 1 } @{ $t->{key} };
	my $keycols = join(', ', map { col_ddl($_) } grep { $iskey{ $_->{name} } } @{ $t->{cols} });
	my $key = join(', ', @{ $t->{key} });
	my $eq = sub { my ($l, $r) = @_; join(' AND ', map { "$l.$_ = $r.$_" } @{ $t->{key} }) };
	my ($h, $hf) = ($t->{heap}, "$t->{heap}_f");
	return (
		"CREATE TABLE $t->{name}_f (fid int PRIMARY KEY, $keycols, FOREIGN KEY ($key) REFERENCES $t->{name} ON DELETE CASCADE)",
		"CREATE TABLE $hf (fid int PRIMARY KEY, $keycols)",
		"CREATE FUNCTION ${hf}_ref() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN"
		  . " IF NOT EXISTS (SELECT 1 FROM $h x WHERE " . $eq->('x', 'NEW') . ") THEN"
		  . " RAISE foreign_key_violation USING MESSAGE = 'no row of $h for a reference'; END IF;"
		  . " RETURN NULL; END \$\$",
		"CREATE TRIGGER ${hf}_ref AFTER INSERT OR UPDATE ON $hf FOR EACH ROW EXECUTE FUNCTION ${hf}_ref()",
		"CREATE FUNCTION ${hf}_del() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN"
		  . " DELETE FROM $hf x WHERE " . $eq->('x', 'OLD') . "; RETURN NULL; END \$\$",
		"CREATE TRIGGER ${hf}_del AFTER DELETE ON $h FOR EACH ROW EXECUTE FUNCTION ${hf}_del()",
		"CREATE FUNCTION ${hf}_upd() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN"
		  . " IF NOT (" . $eq->('NEW', 'OLD') . ")"
		  . " AND NOT EXISTS (SELECT 1 FROM $h x WHERE " . $eq->('x', 'OLD') . ")"
		  . " AND EXISTS (SELECT 1 FROM $hf x WHERE " . $eq->('x', 'OLD') . ") THEN"
		  . " RAISE foreign_key_violation USING MESSAGE = 'a row of $h is still referenced'; END IF;"
		  . " RETURN NULL; END \$\$",
		"CREATE TRIGGER ${hf}_upd AFTER UPDATE ON $h FOR EACH ROW EXECUTE FUNCTION ${hf}_upd()");
}

sub describe
{
	my ($t) = @_;
	return "$t->{name} ($t->{prod}, $t->{shape} key"
	  . join('', map { ", $_=$t->{opts}{$_}" } grep { $_ ne 'changelog_producer' } sort keys %{ $t->{opts} })
	  . ')';
}

# ---------------------------------------------------------------- values
#
# A value is undef (NULL) or [tag, ...]: ['i', int], ['s', string],
# ['b', start, n] (n md5 hex digests from start on: 32n bytes that do not
# compress), ['n', numeric literal], ['f', float8 literal].

sub num_lit
{
	my ($r, $q) = @_;               # the value q/4, at a random scale
	my $need = $q % 4 == 0 ? 0 : $q % 2 == 0 ? 1 : 2;
	my $scale = $need + $r->below(3);
	return sprintf('%.*f', $scale, $q / 4);
}

# canonical text of a numeric literal: 1.50, 1.5 and 01.500 are one key
sub num_norm
{
	my ($s) = @_;
	my $neg = $s =~ s/^-//;
	$s =~ s/^0+(?=\d)//;
	$s =~ s/(\.\d*?)0+$/$1/;
	$s =~ s/\.$//;
	$neg = 0 if $s eq '0';
	return ($neg ? '-' : '') . $s;
}

# canonical text of a float8 (its text or its jsonb rendering): 0 and -0
# are one key, as are all NaNs
sub float_norm
{
	my ($s) = @_;
	return 'NaN' if $s =~ /^\s*[-+]?nan\s*$/i;
	return ($1 // '') . 'Infinity' if $s =~ /^\s*(-)?\+?inf(inity)?\s*$/i;
	my $x = 0 + $s;
	return '0' if $x == 0;
	return sprintf('%.17g', $x);
}

# canonical text of a key under ci: case-folded (see @CI_KEYS)
sub ci_norm
{
	my ($s) = @_;
	utf8::upgrade($s);
	return lc $s;
}

# a float8 key: a multiple of 0.25 in one of a few spellings, or a
# special value
sub float_lit
{
	my ($r) = @_;
	return $r->pick(\@FLOAT_SPECIAL) if $r->chance(0.25);
	my $q = $r->chance(0.9) ? $r->between(-8, 160) : $r->between(161, 600);
	my $x = $q / 4;
	return $r->pick([ "$x", sprintf('%.2f', $x), sprintf('%.3e', $x) ]);
}

# a key equal to $v under the key's operator class, often spelt
# otherwise: another case of a ci key, the other zero
sub key_twin
{
	my ($g, $t, $v) = @_;
	my $r = $g->{rng};
	my ($tag, $x) = @$v;
	if ($tag eq 'f')
	{
		return [ 'f', $r->pick([ '0', '-0', '-0.0', '0e5' ]) ] if float_norm($x) eq '0';
		return [ 'f', $r->pick([ $x, float_norm($x) ]) ];
	}
	my @same = grep { ci_norm($_) eq ci_norm($x) } @CI_KEYS;
	push @same, map { my $y = $x; $y =~ s/^[wW]/$_/; $y } ('w', 'W') if $x =~ /^[wW]\d/;
	return [ 's', @same ? $r->pick(\@same) : $x ];
}

sub gen_key_val
{
	my ($g, $t, $col) = @_;
	my $r = $g->{rng};
	my $ty = $t->{type}{$col};
	if ($ty eq 'int')
	{
		if ($t->{shape} eq 'comp')
		{
			return [ 'i', $r->chance(0.9) ? $r->between(0, 15) : $r->between(16, 60) ];
		}
		my $x = $r->below(100);
		return [ 'i', $x < 85 ? $r->between(0, 40) : $x < 95 ? $r->between(41, 150) : $r->between(-8, -1) ];
	}
	return [ 's', $r->pick(\@COMP_A) ] if $ty eq 'ctext';
	return [ 's', $r->chance(0.85) ? $r->pick(\@CI_KEYS) : $r->pick([ 'w', 'W' ]) . $r->between(0, 300) ] if $ty eq 'ci';
	return [ 'f', float_lit($r) ] if $ty eq 'float';
	if ($ty eq 'text')
	{
		return [ 's', $r->chance(0.85) ? $r->pick(\@TEXT_KEYS) : 'w' . $r->between(0, 300) ];
	}
	return [ 'n', num_lit($r, $r->chance(0.9) ? $r->between(-8, 160) : $r->between(161, 600)) ];
}

sub gen_val
{
	my ($g, $t, $col) = @_;
	my $r = $g->{rng};
	my $ty = $t->{type}{$col};
	return gen_key_val($g, $t, $col) if grep { $_ eq $col } @{ $t->{key} };
	if ($ty eq 'int')
	{
		return undef if $r->chance(0.12);
		return [ 'i', $r->between(-3, 40) ];
	}
	if ($ty eq 'num')
	{
		return undef if $r->chance(0.15);
		return [ 'n', num_lit($r, $r->between(-400, 4000)) ];
	}
	return undef if $r->chance(0.12);
	if ($r->chance($g->{avoid}{spill} || $t->{unique} ? 0 : 0.05))
	{
		return [ 'b', $r->between(1, 100000), $r->pick([ 40, 40, 100, 100, 100, 400, 400, 1600, 3200 ]) ];
	}
	return [ 's', $r->pick(\@SPECIAL_TEXT) ] if $r->chance(0.06);
	return [ 's', 'v' . $r->between(0, 999) ];
}

sub blob_text
{
	my ($start, $n) = @_;
	return join('', map { md5_hex($_) } $start .. $start + $n - 1);
}

sub quote_lit
{
	my ($s) = @_;
	$s =~ s/'/''/g;
	return "'$s'";
}

# SQL expression of a value of type $ty, typed
sub sql_val
{
	my ($ty, $v) = @_;
	my $st = $SQLTYPE{$ty};
	return "NULL::$st" unless defined $v;
	my ($tag, @a) = @$v;
	return "$a[0]::int" if $tag eq 'i';
	return "$a[0]::numeric" if $tag eq 'n';
	return quote_lit($a[0]) . '::float8' if $tag eq 'f';
	return quote_lit($a[0]) . '::text' if $tag eq 's';
	my $last = $a[0] + $a[1] - 1;
	return "(SELECT string_agg(md5(j::text), '') FROM generate_series($a[0], $last) gs(j))";
}

# COPY text-format field of a value
sub copy_val
{
	my ($v) = @_;
	return '\\N' unless defined $v;
	my ($tag, @a) = @$v;
	return blob_text(@a) if $tag eq 'b';
	my $s = "$a[0]";
	$s =~ s/\\/\\\\/g;
	$s =~ s/\t/\\t/g;
	$s =~ s/\n/\\n/g;
	$s =~ s/\r/\\r/g;
	return $s;
}

# identity of a key (hash of column => value) for distinctness
sub key_id
{
	my ($t, $row) = @_;
	return join("\x1f", map {
		my $v = $row->{$_};
		my $ty = $t->{type}{$_};
		!defined $v ? "\x00null" : $v->[0] eq 'n' ? num_norm($v->[1]) : $v->[0] eq 'f' ? float_norm($v->[1])
		  : $ty eq 'ci' ? ci_norm($v->[1]) : $v->[1]
	} @{ $t->{key} });
}

# $n rows with distinct keys; $cols: the columns to fill
sub gen_rows
{
	my ($g, $t, $n, $cols) = @_;
	my (%seen, @rows);
	for (1 .. $n * 3)
	{
		last if @rows >= $n;
		my %row = map { $_ => gen_val($g, $t, $_) } @$cols;
		next if $seen{ key_id($t, \%row) }++;
		push @rows, \%row;
	}
	return @rows;
}

sub values_sql
{
	my ($t, $cols, @rows) = @_;
	return 'VALUES ' . join(', ', map {
		my $row = $_;
		'(' . join(', ', map { sql_val($t->{type}{$_}, $row->{$_}) } @$cols) . ')'
	} @rows);
}

# ---------------------------------------------------------------- SQL pieces
#
# Statements are built with the placeholder %T for the table name: the
# pkmerge side substitutes t<i>, the heap side h<i>.  The table's alias is
# always x.

sub key_on
{
	my ($t) = @_;
	return join(' AND ', map { "x.$_ = s.$_" } @{ $t->{key} });
}

sub key_text
{
	my ($t) = @_;
	# the exact text: -0 and 0, 10 and 10.00 told apart
	return join(', ', map { $t->{type}{$_} =~ /^(int|num|float)$/ ? "x.${_}::text" : "x.$_" } @{ $t->{key} });
}

sub key_order
{
	my ($t, $dir) = @_;
	$dir = $dir ? " $dir" : '';
	return join(', ', map { "x.$_$dir" } @{ $t->{key} });
}

# the heap twin's form of an upsert: MERGE with the same source.
#   mode replace: every column takes the source's value (an omitted one
#     its default), the key's representation included, as pkmerge's
#     INSERT replaces the whole row;
#   mode nothing: ON CONFLICT DO NOTHING;
#   mode update: ON CONFLICT DO UPDATE SET $set [WHERE $cond] (EXCLUDED is s)
sub heap_upsert
{
	my ($t, $cols, $source, $mode, $set, $cond) = @_;
	my %listed = map { $_ => 1 } @$cols;
	my $sql = "MERGE INTO %T AS x USING ($source) AS s(" . join(', ', @$cols) . ') ON ' . key_on($t);
	if ($mode eq 'replace')
	{
		$sql .= ' WHEN MATCHED THEN UPDATE SET '
		  . join(', ', map { $listed{ $_->{name} } ? "$_->{name} = s.$_->{name}" : "$_->{name} = DEFAULT" } @{ $t->{cols} });
	}
	elsif ($mode eq 'update')
	{
		$sql .= ' WHEN MATCHED' . ($cond ? " AND $cond" : '') . " THEN UPDATE SET $set";
	}
	$sql .= ' WHEN NOT MATCHED THEN INSERT (' . join(', ', @$cols) . ') VALUES ('
	  . join(', ', map { "s.$_" } @$cols) . ')';
	return $sql;
}

# a predicate on the key: point, list, range, open range, or none
sub key_pred
{
	my ($g, $t, $kind) = @_;
	my $r = $g->{rng};
	$kind //= $r->weighted({ point => 3, range => 4, in => 1, open => 1, nonkey => 1, all => 0.3 });
	my $k0 = $t->{key}[0];
	my $lit = sub { sql_val($t->{type}{ $_[0] }, gen_key_val($g, $t, $_[0])) };
	if ($kind eq 'point')
	{
		return join(' AND ', map { "x.$_ = " . $lit->($_) } @{ $t->{key} });
	}
	if ($kind eq 'in')
	{
		if (@{ $t->{key} } > 1)
		{
			return '(x.a, x.b) IN (' . join(', ', map { '(' . $lit->('a') . ', ' . $lit->('b') . ')' } 1 .. 3) . ')';
		}
		return "x.$k0 IN (" . join(', ', map { $lit->($k0) } 1 .. $r->between(2, 5)) . ')';
	}
	if ($kind eq 'range' && $r->chance(0.2))
	{
		# over the keys bulk inserts write (see bulk_source)
		my $lo = $r->between(-10, 650);
		my $hi = $lo + $r->between(0, 120);
		return "x.b BETWEEN $lo AND $hi" if $t->{shape} eq 'comp';
		return "x.s >= 'w$lo' AND x.s < 'w$hi'" if $t->{shape} eq 'text';
		return "x.s >= '" . $r->pick([ 'w', 'W' ]) . "$lo' AND x.s < '" . $r->pick([ 'w', 'W' ]) . "$hi'"
		  if $t->{shape} eq 'ci';
		return 'x.k BETWEEN ' . ($lo / 4) . ' AND ' . ($hi / 4) if $t->{shape} eq 'float' && $r->chance(0.5);
		return "x.k BETWEEN $lo AND $hi";
	}
	if ($kind eq 'range')
	{
		if ($t->{shape} eq 'comp')
		{
			my $lo = $r->between(0, 12);
			return $r->chance(0.7)
			  ? 'x.a = ' . $lit->('a') . " AND x.b BETWEEN $lo AND " . ($lo + $r->between(0, 6))
			  : '(x.a, x.b) BETWEEN (' . $lit->('a') . ", $lo) AND (" . $lit->('a') . ', ' . ($lo + 5) . ')';
		}
		if ($t->{shape} eq 'text' || $t->{shape} eq 'ci')
		{
			return "x.s >= " . $lit->('s') . " AND x.s < " . $lit->('s');
		}
		if ($t->{shape} eq 'float')
		{
			return 'x.k BETWEEN ' . $lit->('k') . ' AND ' . $lit->('k') if $r->chance(0.3);
			my $lo = $r->between(-8, 150) / 4;
			return "x.k BETWEEN $lo AND " . ($lo + $r->between(0, 30) / 4);
		}
		if ($t->{shape} eq 'int')
		{
			my $lo = $r->between(-5, 40);
			return "x.k BETWEEN $lo AND " . ($lo + $r->between(0, 12));
		}
		my $lo = $r->between(-8, 150);
		return 'x.k BETWEEN ' . num_lit($r, $lo) . ' AND ' . num_lit($r, $lo + $r->between(0, 30));
	}
	if ($kind eq 'open')
	{
		return "x.$k0 " . $r->pick([ '>', '>=', '<', '<=' ]) . ' ' . $lit->($k0);
	}
	if ($kind eq 'nonkey')
	{
		return $r->pick([ 'x.g % 3 = 1', 'x.g IS NULL', 'x.v IS NULL', 'length(x.v) > 1000',
				'x.g > 20', "x.v LIKE 'v1%'" ]);
	}
	return 'true';
}

# SET list over non-key columns (at least one)
sub nonkey_set
{
	my ($g, $t) = @_;
	my $r = $g->{rng};
	my @set;
	for my $c (@{ $t->{nonkey} })
	{
		next unless $r->chance(0.6);
		my $ty = $t->{type}{$c};
		my $e;
		if ($c eq 'g')
		{
			$e = $r->pick([ 'coalesce(x.g, 0) + 1', 'NULL', sql_val('int', gen_val($g, $t, 'g')),
					'x.g * 2', 'length(x.v)', 'DEFAULT' ]);
		}
		elsif ($ty eq 'num')
		{
			$e = $r->pick([ 'x.n + 0.25', 'NULL', sql_val('num', gen_val($g, $t, $c)), 'round(x.n)' ]);
		}
		else
		{
			$e = $r->chance(0.5) ? sql_val('text', gen_val($g, $t, $c))
			  : $r->pick([ "x.v || 'u'", 'upper(x.v)', 'left(x.v, 10)', 'NULL', "coalesce(x.v, '') || x.g" ]);
		}
		push @set, "$c = $e";
	}
	push @set, 'g = coalesce(x.g, 0) - 1' unless @set;
	return join(', ', @set);
}

# expression moving key column(s) (for UPDATE ... SET <this>)
sub key_move
{
	my ($g, $t) = @_;
	my $r = $g->{rng};
	my $s = $t->{shape};
	return 'k = x.k ' . $r->pick([ '+ 1', '- 1', '+ 2', '- 2', '+ 3', '+ 100' ]) if $s eq 'int' && $r->chance(0.8);
	return $r->pick([ 'k = -x.k', 'k = 30 - x.k', 'k = x.k * 2' ]) if $s eq 'int';
	if ($s eq 'comp')
	{
		return $r->pick([ 'b = x.b + 1', 'b = x.b - 1', 'b = x.b + 2', "a = 'c'", 'a = upper(x.a)',
				"a = x.a || 'b'", 'b = 15 - x.b' ]);
	}
	if ($s eq 'text')
	{
		return $r->pick([ "s = x.s || '_'", 's = upper(x.s)', 's = lower(x.s)', "s = 'z' || x.s",
				's = substr(x.s, 2)', "s = x.s || ''" ]);
	}
	if ($s eq 'ci')
	{
		# most keep the key (an equal value in another case) or move it
		# onto a key equal to another row's
		return $r->pick([ 's = upper(x.s)', 's = lower(x.s)', 's = initcap(x.s)', "s = x.s || '_'", "s = 'Z' || x.s",
				's = substr(x.s, 2)', "s = x.s || ''", 's = upper(x.s)', 's = lower(x.s)',
				"s = CASE WHEN x.s = lower(x.s) COLLATE \"C\" THEN upper(x.s) ELSE lower(x.s) END" ]);
	}
	if ($s eq 'float')
	{
		# -x.k and x.k * -1 turn 0 into -0 and back, x.k + 0 -0 into 0
		return $r->pick([ 'k = x.k + 1', 'k = x.k - 1', 'k = -x.k', 'k = x.k * -1', 'k = x.k * 1.0', 'k = x.k + 0',
				'k = x.k + 0.25', 'k = x.k * 2', 'k = x.k - 0.5', 'k = -x.k' ]);
	}
	return $r->pick([ 'k = x.k + 0.5', 'k = x.k - 1', 'k = x.k + 1.00', 'k = x.k * 1.0',
			'k = round(x.k)', 'k = -x.k', 'k = x.k + 0.25' ]);
}

sub returning
{
	my ($g, $t) = @_;
	return $g->{rng}->chance(0.4) ? ' RETURNING ' . key_text($t) . ', md5(x::text)' : '';
}

# ---------------------------------------------------------------- operations
#
# A step is a hash: k => 'sql' (a session statement: BEGIN, SAVEPOINT, ...),
# 'pair' (pk => pkmerge statement, heap => heap statement, each with %T;
# optional pkcopy/heapcopy: COPY data lines; cnt: compare the row counts; xstate:
# heap SQLSTATE => the pkmerge SQLSTATE that corresponds to it), 'pk' (a
# pkmerge-only statement such as pk_compact), 'check' (compare a table pair
# now), 'expire' (check the changelog, then pk_expire_snapshots),
# 'clcheck' (check the changelog), 'restart' (an immediate shutdown and a
# start: crash recovery; where the harness can).  t is the table's index.

sub pair
{
	my ($t, $op, $pk, $heap, %o) = @_;
	return { k => 'pair', t => $t->{idx}, op => $op, pk => $pk, heap => $heap // $pk, cnt => 1, %o };
}

sub all_cols { my ($t) = @_; return [ map { $_->{name} } @{ $t->{cols} } ]; }

sub op_insert
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	my $n = $r->chance(0.5) ? 1 : $r->between(2, 8);
	my $cols = all_cols($t);
	# now and then leave a non-key column out: it gets its default, on
	# pkmerge too (the upsert replaces the whole row)
	if ($r->chance(0.15))
	{
		my $drop = $r->pick($t->{nonkey});
		$cols = [ grep { $_ ne $drop } @$cols ];
	}
	my @rows = gen_rows($g, $t, $n, $cols);
	my $vals = values_sql($t, $cols, @rows);
	my $collist = join(', ', @$cols);
	my $pk = $r->chance(0.2)
	  ? "INSERT INTO %T AS x ($collist) SELECT * FROM ($vals) v"
	  : "INSERT INTO %T AS x ($collist) $vals";
	my %o;
	if ($r->chance(0.3))
	{
		# RETURNING: the rows as written, which the heap twin then holds
		my $kt = key_text($t);
		$pk .= " RETURNING $kt, md5(x::text)";
		my $keys = join(', ', @{ $t->{key} });
		$o{heapret} = "SELECT $kt, md5(x::text) FROM %T x WHERE ("
		  . join(', ', map { "x.$_" } @{ $t->{key} }) . ") IN (SELECT $keys FROM ($vals) v($collist))";
	}
	return pair($t, 'insert', $pk, heap_upsert($t, $cols, $vals, 'replace'), %o);
}

# a key move written as a data-modifying CTE: the rows deleted are
# inserted again under other keys, in one statement
sub op_cte_move
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	$ctx->{del}{ $t->{idx} } = 1;
	my %move = (
		int  => { k => 'd.k + ' . $r->pick([ 1, 2, 50 ]) },
		comp => $r->chance(0.5) ? { b => 'd.b + 1' } : { a => "d.a || 'm'" },
		text => { s => "d.s || '_'" },
		num  => { k => 'd.k + ' . $r->pick([ '0.5', '1.0', '-0.25' ]) },
		ci   => { s => $r->pick([ 'upper(d.s)', 'lower(d.s)', "d.s || '_'" ]) },
		float => { k => $r->pick([ 'd.k + 1', '-d.k', 'd.k * -1', 'd.k + 0.25' ]) },
	);
	my $m = $move{ $t->{shape} };
	my $cols = all_cols($t);
	my $sel = join(', ', map { $m->{$_} // "d.$_" } @$cols);
	return pair($t, 'cte_move', 'WITH d AS (DELETE FROM %T AS x WHERE ' . key_pred($g, $t, $r->pick([ 'range', 'point', 'in' ]))
		  . ' RETURNING x.*) INSERT INTO %T (' . join(', ', @$cols) . ") SELECT $sel FROM d");
}

# rows computed by the statement, many and large: spills at 1MB
sub bulk_source
{
	my ($g, $t) = @_;
	my $r = $g->{rng};
	my $n = $r->pick([ 20, 60, 150, 300, 400 ]);
	my $lo = $r->between(-10, 300);
	my $hi = $lo + $n - 1;
	# (v of a table with the unique constraint fits a btree entry)
	my $rep = $r->pick($t->{unique} ? [ 1, 10, 40 ] : [ 1, 10, 40, 120, $n <= 150 ? 300 : 20 ]);
	my $m = $r->between(2, 9);
	my %e = (
		g => "i % $m",
		v => $r->chance(0.2) ? "CASE WHEN i % 5 = 0 THEN NULL ELSE repeat(md5(i::text), $rep) END"
		: "repeat(md5(i::text), $rep)",
		n => 'i * 0.01');
	my $s = $t->{shape};
	if ($s eq 'int')     { $e{k} = 'i'; }
	elsif ($s eq 'comp') { $e{a} = "chr(97 + i % 3)"; $e{b} = 'i'; }
	elsif ($s eq 'text') { $e{s} = "'w' || i"; }
	elsif ($s eq 'ci')   { $e{s} = $r->pick([ "'w' || i", "'W' || i", "CASE WHEN i % 2 = 0 THEN 'W' ELSE 'w' END || i" ]); }
	elsif ($s eq 'float') { $e{k} = $r->pick([ '(i * 0.25)::float8', '-(i::float8)', 'i::float8 * -0.5', 'i::float8' ]); }
	else { $e{k} = $r->chance(0.5) ? 'i * 0.5' : '(i * 0.25)::numeric(12,3)'; }
	my $cols = all_cols($t);
	return ($cols, 'SELECT ' . join(', ', map { $e{$_} } @$cols) . " FROM generate_series($lo, $hi) i");
}

sub op_bulk
{
	my ($g, $t, $ctx) = @_;
	my ($cols, $src) = bulk_source($g, $t);
	$ctx->{bulk}{ $t->{idx} } = 1;
	return pair($t, 'bulk', 'INSERT INTO %T (' . join(', ', @$cols) . ") $src",
		heap_upsert($t, $cols, $src, 'replace'));
}

sub op_onconflict
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	my $cols = all_cols($t);
	my ($src, $vals);
	if ($r->chance(0.1) && !$g->{avoid}{spill})
	{
		($cols, $src) = bulk_source($g, $t);
		$vals = $src;
	}
	else
	{
		my @rows = gen_rows($g, $t, $r->chance(0.5) ? 1 : $r->between(2, 6), $cols);
		$vals = values_sql($t, $cols, @rows);
	}
	my $collist = join(', ', @$cols);
	my $keys = join(', ', @{ $t->{key} });
	my $target = $r->chance(0.2) ? "ON CONSTRAINT %T_pkey" : "($keys)";
	if ($r->chance(0.4))
	{
		# DO NOTHING, with or without a conflict target
		my $tgt = $r->chance(0.3) && !$t->{unique} ? '' : " $target";
		return pair($t, 'onc_nothing', "INSERT INTO %T AS x ($collist) $vals ON CONFLICT$tgt DO NOTHING",
			heap_upsert($t, $cols, $vals, 'nothing'));
	}
	my @set;
	for my $c (@{ $t->{nonkey} })
	{
		next unless $r->chance(0.7);
		push @set, $c eq 'g' ? $r->pick([ 'g = %E.g', 'g = coalesce(x.g, 0) + coalesce(%E.g, 1)' ])
		  : $c eq 'v' ? $r->pick([ 'v = %E.v', "v = left(coalesce(x.v, ''), 20) || coalesce(%E.v, 'null')" ])
		  : "$c = %E.$c";
	}
	push @set, 'g = %E.g' unless @set;
	my $set = join(', ', @set);
	my $cond = $r->chance(0.3) ? $r->pick([ 'x.g IS DISTINCT FROM 3', '%E.g IS NOT NULL', 'x.g < %E.g' ]) : undef;
	(my $pkset = $set) =~ s/%E/EXCLUDED/g;
	(my $hset = $set) =~ s/%E/s/g;
	my ($pkcond, $hcond);
	($pkcond = $cond) =~ s/%E/EXCLUDED/g if $cond;
	($hcond = $cond) =~ s/%E/s/g if $cond;
	return pair($t, 'onc_update',
		"INSERT INTO %T AS x ($collist) $vals ON CONFLICT $target DO UPDATE SET $pkset"
		  . ($pkcond ? " WHERE $pkcond" : ''),
		heap_upsert($t, $cols, $vals, 'update', $hset, $hcond));
}

sub op_update
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	my $sql = 'UPDATE %T AS x SET ' . nonkey_set($g, $t) . ' WHERE ' . key_pred($g, $t) . returning($g, $t);
	return pair($t, 'update', $sql);
}

# UPDATE of key columns: one row to a key drawn at random, or a range
# shifted (k = k + 1 ...), which moves keys over each other
sub op_keyupdate
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	$ctx->{del}{ $t->{idx} } = 1;
	if (($t->{shape} eq 'ci' || $t->{shape} eq 'float') && $r->chance(0.25))
	{
		# the key to an equal value spelt otherwise: 'a' to 'A', 0 to -0
		my $k = $t->{key}[0];
		my $old = gen_key_val($g, $t, $k);
		my $new = key_twin($g, $t, $old);
		my $set = "$k = " . sql_val($t->{type}{$k}, $new);
		$set .= ', g = coalesce(x.g, 0) + 100' if $r->chance(0.3);
		return pair($t, 'keyupdate', "UPDATE %T AS x SET $set WHERE x.$k = " . sql_val($t->{type}{$k}, $old)
			  . returning($g, $t));
	}
	if ($r->chance(0.4) || $g->{avoid}{shift})
	{
		my $new = join(', ', map { "$_ = " . sql_val($t->{type}{$_}, gen_key_val($g, $t, $_)) } @{ $t->{key} });
		$new .= ', g = coalesce(x.g, 0) + 100' if $r->chance(0.3);
		return pair($t, 'keyupdate', "UPDATE %T AS x SET $new WHERE " . key_pred($g, $t, 'point') . returning($g, $t));
	}
	return pair($t, 'shift', 'UPDATE %T AS x SET ' . key_move($g, $t) . ' WHERE '
		  . key_pred($g, $t, $r->chance(0.8) ? 'range' : $r->pick([ 'open', 'nonkey', 'all', 'in' ]))
		  . returning($g, $t));
}

sub op_delete
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	$ctx->{del}{ $t->{idx} } = 1;
	if ($r->chance(0.1))
	{
		my $cols = $t->{key};
		my @rows = gen_rows($g, $t, $r->between(1, 4), $cols);
		return pair($t, 'delete', 'DELETE FROM %T AS x USING (' . values_sql($t, $cols, @rows) . ') AS s('
			  . join(', ', @$cols) . ') WHERE ' . key_on($t) . returning($g, $t));
	}
	my $pred = key_pred($g, $t, $r->chance(0.02) ? 'all' : undef);
	return pair($t, 'delete', "DELETE FROM %T AS x WHERE $pred" . returning($g, $t));
}

sub op_merge
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	$ctx->{del}{ $t->{idx} } = 1;
	my $cols = all_cols($t);
	my $src;
	my $heapsrc;
	my @same = grep { $_->{shape} eq $t->{shape} && $_->{idx} != $t->{idx} } @{ $g->{tables} };
	if (@same && $r->chance(0.15))
	{
		# from the other table of this shape: pkmerge reads pkmerge, heap heap
		my $o = $same[0];
		my $pred = key_pred($g, $o, 'range');
		$src = 'SELECT ' . join(', ', map { "x.$_" } @$cols) . " FROM $o->{name} x WHERE $pred";
		$heapsrc = 'SELECT ' . join(', ', map { "x.$_" } @$cols) . " FROM $o->{heap} x WHERE $pred";
	}
	elsif ($r->chance(0.1) && !$g->{avoid}{spill})
	{
		(undef, $src) = bulk_source($g, $t);
	}
	else
	{
		$src = values_sql($t, $cols, gen_rows($g, $t, $r->between(1, 6), $cols));
	}
	my @when;
	my @matched = (
		'WHEN MATCHED AND s.g IS NULL THEN DELETE',
		'WHEN MATCHED AND x.g > 20 THEN DO NOTHING',
		'WHEN MATCHED AND s.g % 2 = 0 THEN UPDATE SET g = coalesce(x.g, 0) + coalesce(s.g, 0), v = s.v',
		'WHEN MATCHED AND x.v IS NULL THEN DELETE');
	push @when, $r->pick(\@matched) if $r->chance(0.6);
	push @when, $r->pick(\@matched) if $r->chance(0.3);
	my $final = $r->weighted({ update => 5, delete => 2, none => 2,
			keyupd => ($g->{avoid}{keyupdate} || $g->{avoid}{shift}) ? 0 : 1 });
	# for keys equal but not identical, now and then the key too: the
	# source's equal value replaces the target's
	my @upd = ($t->{shape} =~ /^(num|ci|float)$/ && $r->chance(0.4)) ? @{ $t->{key} } : ();
	push @when, 'WHEN MATCHED THEN UPDATE SET ' . join(', ', map { "$_ = s.$_" } @upd, @{ $t->{nonkey} }) if $final eq 'update';
	push @when, 'WHEN MATCHED THEN DELETE' if $final eq 'delete';
	push @when, 'WHEN MATCHED THEN UPDATE SET ' . key_move($g, $t) if $final eq 'keyupd';
	push @when, 'WHEN NOT MATCHED AND s.g IS DISTINCT FROM 0 THEN INSERT (' . join(', ', @$cols) . ') VALUES ('
	  . join(', ', map { "s.$_" } @$cols) . ')' if $r->chance(0.3);
	push @when, $r->chance(0.8)
	  ? 'WHEN NOT MATCHED THEN INSERT (' . join(', ', @$cols) . ') VALUES (' . join(', ', map { "s.$_" } @$cols) . ')'
	  : 'WHEN NOT MATCHED THEN DO NOTHING';
	my $head = 'MERGE INTO %T AS x USING (%S) AS s(' . join(', ', @$cols) . ') ON ' . key_on($t) . ' ';
	my $body = join(' ', @when);
	$heapsrc //= $src;
	(my $pk = $head . $body) =~ s/%S/$src/;
	(my $heap = $head . $body) =~ s/%S/$heapsrc/;
	return pair($t, 'merge', $pk, $heap);
}

sub op_copy
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	my $cols = all_cols($t);
	# COPY data carries values literally: keep them a few kB at most
	my @rows = gen_rows($g, $t, $r->between(1, 12), $cols);
	for my $row (@rows)
	{
		$row->{v} = [ 'b', $row->{v}[1], $r->pick([ 40, 100, 200 ]) ] if defined $row->{v} && $row->{v}[0] eq 'b';
	}
	my @lines = map { my $row = $_; join("\t", map { copy_val($row->{$_}) } @$cols) } @rows;
	my $collist = join(', ', @$cols);
	return pair($t, 'copy', "COPY %T ($collist) FROM STDIN", heap_upsert($t, $cols, values_sql($t, $cols, @rows), 'replace'),
		pkcopy => \@lines, cnt => 0);
}

# statements that fail (or may), always on both sides: the harness checks
# that pkmerge raises what heap raises, and the transaction goes on after
# ROLLBACK TO SAVEPOINT
sub op_fail
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	my $kind = $r->weighted({ divzero => 3, merge_twice => $g->{avoid}{fail_merge} ? 0 : 3, null_key => 1,
			key_null => 1, check => 1, copy_bad => 1,
			onc_twice => ($ctx->{del}{ $t->{idx} } && $g->{avoid}{onc_after_delete}) ? 0 : 2 });
	my $keys = join(', ', @{ $t->{key} });
	# predicates that match rows more often than not: the failure happens
	my $pred = sub { key_pred($g, $t, $r->weighted({ range => 2, all => 1, point => 1, nonkey => 1 })) };
	if ($kind eq 'divzero')
	{
		return pair($t, 'fail_divzero', "UPDATE %T AS x SET g = 1 / (length(coalesce(x.v, '')) * 0) WHERE "
			  . $pred->());
	}
	if ($kind eq 'merge_twice')
	{
		# the source matches one target row twice: 21000 when it exists
		my @rows = gen_rows($g, $t, $r->between(1, 3), $t->{key});
		my @src = (@rows, $rows[0]);
		@src = $r->shuffle(@src);
		my $act = $r->chance(0.5) ? 'DELETE' : 'UPDATE SET g = 0';
		return pair($t, 'fail_merge', 'MERGE INTO %T AS x USING (' . values_sql($t, $t->{key}, @src) . ") AS s($keys) ON "
			  . key_on($t) . " WHEN MATCHED THEN $act");
	}
	if ($kind eq 'null_key')
	{
		my $cols = all_cols($t);
		my ($row) = gen_rows($g, $t, 1, $cols);
		$row->{ $t->{key}[-1] } = undef;
		my $vals = values_sql($t, $cols, $row);
		return pair($t, 'fail_nullkey', 'INSERT INTO %T (' . join(', ', @$cols) . ") $vals",
			heap_upsert($t, $cols, $vals, 'replace'));
	}
	if ($kind eq 'key_null')
	{
		return pair($t, 'fail_keynull', "UPDATE %T AS x SET $t->{key}[0] = NULL WHERE " . $pred->());
	}
	if ($kind eq 'check')
	{
		return pair($t, 'fail_check', 'UPDATE %T AS x SET g = -2000000 WHERE ' . $pred->());
	}
	if ($kind eq 'onc_twice')
	{
		# two proposed rows with one key: 21000 ("cannot affect row a
		# second time") on pkmerge; the heap twin's MERGE says 21000 when
		# the key exists, 23505 when it inserts it twice
		my $cols = all_cols($t);
		my @rows = gen_rows($g, $t, $r->between(1, 3), $cols);
		my %dup = %{ $rows[0] };
		$dup{g} = [ 'i', 99 ];
		# ci, float: now and then the key spelt otherwise ('B' after 'b')
		$dup{ $t->{key}[0] } = key_twin($g, $t, $dup{ $t->{key}[0] })
		  if $t->{shape} =~ /^(ci|float)$/ && $r->chance(0.5);
		my $vals = values_sql($t, $cols, $r->shuffle(@rows, \%dup));
		return pair($t, 'fail_onc', 'INSERT INTO %T AS x (' . join(', ', @$cols) . ") $vals ON CONFLICT ($keys) DO UPDATE SET g = EXCLUDED.g",
			heap_upsert($t, $cols, $vals, 'update', 'g = s.g'), xstate => { 23505 => '21000' });
	}
	# COPY whose last line does not parse: both sides fail with 22P02
	my $cols = all_cols($t);
	my @rows = gen_rows($g, $t, $r->between(1, 5), $cols);
	my @lines = map { my $row = $_; join("\t", map { copy_val($row->{$_}) } @$cols) } @rows;
	my @bad = map { $t->{type}{$_} =~ /int|num|float/ ? 'notanumber' : 'x' } @$cols;
	push @lines, join("\t", @bad);
	my $collist = join(', ', @$cols);
	return pair($t, 'fail_copy', "COPY %T ($collist) FROM STDIN", "COPY %T ($collist) FROM STDIN",
		pkcopy => \@lines, heapcopy => \@lines, cnt => 0);
}

sub op_truncate
{
	my ($g, $t, $ctx) = @_;
	$ctx->{del}{ $t->{idx} } = 1;
	return pair($t, 'truncate', $t->{fk} ? 'TRUNCATE %T, %T_f' : 'TRUNCATE %T', undef, cnt => 0);
}

# references to keys (most of which have rows), or some taken away again
sub op_ref
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	if ($r->chance(0.2))
	{
		my $m = $r->between(3, 9);
		return pair($t, 'unref', 'DELETE FROM %T_f WHERE fid % ' . $m . ' = ' . $r->below($m));
	}
	my @rows = map {
		my $fid = ++$g->{fid};
		'(' . join(', ', $fid, map { sql_val($t->{type}{$_}, gen_key_val($g, $t, $_)) } @{ $t->{key} }) . ')'
	} 1 .. $r->between(1, 3);
	return pair($t, 'ref', 'INSERT INTO %T_f VALUES ' . join(', ', @rows));
}

# a cursor over the table read piecewise while the transaction goes on
# writing it: it must go on showing the rows as of its DECLARE
sub op_cursor
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	my $i = $t->{idx};
	my $c = $ctx->{cursor}{$i};
	if (!$c)
	{
		$c = $ctx->{cursor}{$i} = 'c%T_' . (++$g->{sp});
		my $pred = $r->chance(0.5) ? ' WHERE ' . key_pred($g, $t, $r->pick([ 'range', 'open', 'nonkey' ])) : '';
		my $dir = $r->chance(0.3) ? 'DESC' : '';
		return pair($t, 'cursor', "DECLARE $c CURSOR FOR SELECT " . key_text($t) . ", md5(x::text) FROM %T x$pred ORDER BY "
			  . key_order($t, $dir), undef, cnt => 0);
	}
	if ($r->chance(0.2))
	{
		delete $ctx->{cursor}{$i};
		return pair($t, 'cursor', "CLOSE $c", undef, cnt => 0);
	}
	return pair($t, 'cursor', 'FETCH ' . $r->between(1, 20) . " FROM $c", undef, ordered => 1);
}

# ALTER TABLE while the table has rows (and inside transactions that
# wrote it): columns added with no default or a constant one, and dropped
# again; forms that compute every row again (serial, a volatile default)
# are refused by pkmerge (0A000) and then not run on heap.  The generated
# statements name their columns, so added columns keep their default.
sub op_ddl
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	my $added = $g->{added}{ $t->{idx} } //= [];
	if (@$added && $r->chance(0.3))
	{
		my $c = splice(@$added, $r->below(scalar @$added), 1);
		return pair($t, 'ddl', "ALTER TABLE %T DROP COLUMN $c", undef, cnt => 0, pkfirst => 1);
	}
	my $c = 'x' . (++$g->{sp});
	my $form = $r->weighted({ plain => 2, int_default => 2, text_default => 1, refused => 1 });
	if ($form eq 'refused')
	{
		my $ty = $r->pick([ 'serial', 'bigserial', 'int DEFAULT random()::int', 'int DEFAULT (random() * 10)::int' ]);
		return pair($t, 'fail_ddl', "ALTER TABLE %T ADD COLUMN $c $ty", undef, cnt => 0, pkfirst => 1);
	}
	push @$added, $c;
	my $ty = $form eq 'plain' ? 'int' : $form eq 'int_default' ? 'int DEFAULT ' . $r->between(-5, 5)
	  : "text DEFAULT 'd$c'";
	return pair($t, 'ddl', "ALTER TABLE %T ADD COLUMN $c $ty", undef, cnt => 0, pkfirst => 1);
}

# prepared statements, executed again and again (generic plans after the
# fifth) across the session's transactions, writes and ALTER TABLEs
sub op_prepared
{
	my ($g, $t, $ctx) = @_;
	my $r = $g->{rng};
	my $i = $t->{idx};
	my $p = $g->{prepared}{$i};
	my @key = @{ $t->{key} };
	if (!$p)
	{
		my $name = 'p%T_' . (++$g->{sp});
		my $kind = $r->pick([ 'select_point', 'update_point', 'select_range' ]);
		my $n = 0;
		my $point = join(' AND ', map { "x.$_ = \$" . (++$n) } @key);
		my $sql;
		if ($kind eq 'select_point')
		{
			$sql = "SELECT " . key_text($t) . ", md5(x::text) FROM %T x WHERE $point";
		}
		elsif ($kind eq 'update_point')
		{
			$sql = "UPDATE %T AS x SET g = coalesce(x.g, 0) + 1 WHERE $point RETURNING " . key_text($t) . ', md5(x::text)';
		}
		else
		{
			my $k = $key[0];
			$sql = "SELECT " . key_text($t) . ", md5(x::text) FROM %T x WHERE x.$k >= \$1 AND x.$k <= \$2 ORDER BY "
			  . key_order($t);
		}
		$g->{prepared}{$i} = { name => $name, kind => $kind };
		return pair($t, 'prepared', "PREPARE $name AS $sql", undef, cnt => 0);
	}
	if ($r->chance(0.1))
	{
		delete $g->{prepared}{$i};
		return pair($t, 'prepared', "DEALLOCATE $p->{name}", undef, cnt => 0);
	}
	my @args;
	if ($p->{kind} eq 'select_range')
	{
		@args = map { sql_val($t->{type}{ $key[0] }, gen_key_val($g, $t, $key[0])) } 1 .. 2;
	}
	else
	{
		@args = map { sql_val($t->{type}{$_}, gen_key_val($g, $t, $_)) } @key;
	}
	return pair($t, 'prepared', "EXECUTE $p->{name}(" . join(', ', @args) . ')', undef,
		ordered => $p->{kind} eq 'select_range');
}

sub op_compact
{
	my ($g, $t) = @_;
	my $full = $g->{rng}->chance(0.4) ? ', true' : '';
	return { k => 'pk', t => $t->{idx}, op => 'compact', sql => "SELECT pk_compact('%T'$full)" };
}

sub op_weights
{
	my ($g, $t, $ctx) = @_;
	my $a = $g->{avoid};
	my $i = $t->{idx};
	my $after_del = $ctx->{del}{$i} && $a->{onc_after_delete};
	return {
		insert     => 8,
		bulk       => $a->{spill} ? 0 : 1.5,
		onconflict => $after_del ? 0 : 8,
		update     => 8,
		keyupdate  => $a->{keyupdate} ? 0 : $a->{shift} ? 2 : 5,
		delete     => 5,
		merge      => $after_del ? 0 : 5,
		cte_move   => ($a->{keyupdate} || $a->{shift}) ? 0 : 1,
		copy       => 2,
		truncate   => ($a->{truncate} || ($a->{truncate_none} && $t->{prod} eq 'none')) ? 0 : 0.6,
		fail       => ($a->{fail} || ($a->{fail_spill} && $t->{opts}{write_buffer_size})) ? 0 : 3,
		compact    => 1.5,
		check      => 1.5,
		cursor     => ($a->{cursor} || !$ctx->{in_txn}) ? 0 : 2,
		ddl        => $a->{ddl} ? 0 : 0.4,
		prepared   => $a->{prepared} ? 0 : 2,
		ref        => ($t->{fk} && !$a->{ref}) ? 3 : 0,
	};
}

sub gen_op
{
	my ($g, $t, $ctx) = @_;
	my $op = $g->{rng}->weighted(op_weights($g, $t, $ctx));
	return { k => 'check', t => $t->{idx} } if $op eq 'check';
	no strict 'refs';
	return &{"op_$op"}($g, $t, $ctx);
}

# ---------------------------------------------------------------- transactions

# A transaction: { id, steps => [...], tables => [indexes it writes] }
sub next_txn
{
	my ($g) = @_;
	my $r = $g->{rng};
	my $id = $g->{ntxn}++;
	my $kind = $r->weighted({ txn => 82, auto => 10, maint => 8 });
	my $ctx = { del => {}, bulk => {} };
	if ($kind eq 'maint')
	{
		my $t = $r->pick($g->{tables});
		my $m = $r->weighted({ vacuum => 3, vacuum_full => 1, analyze => 1, compact => 3, expire => 2,
				checkpoint => 0.5, clcheck => 2,
				restart => $g->{avoid}{restart} ? 0 : 0.4, switch => $g->{avoid}{switch} ? 0 : 1 });
		my @steps;
		if ($m eq 'vacuum' || $m eq 'analyze' || $m eq 'vacuum_full')
		{
			# VACUUM FULL: a full compaction and every run copied to a new
			# file, rows of columns added since kept with their defaults
			my $v = { vacuum => 'VACUUM', analyze => 'ANALYZE', vacuum_full => 'VACUUM FULL' }->{$m};
			@steps = (pair($t, $m eq 'vacuum_full' ? 'vacuum' : $m, "$v %T", undef, cnt => 0));
		}
		elsif ($m eq 'compact')    { @steps = (op_compact($g, $t)); }
		elsif ($m eq 'expire')     { @steps = ({ k => 'expire', t => $t->{idx} }); }
		elsif ($m eq 'clcheck')    { @steps = ({ k => 'clcheck', t => $t->{idx} }); }
		elsif ($m eq 'switch')
		{
			# another changelog producer: earlier snapshots keep their changes
			my $cur = $g->{prod}{ $t->{idx} } // $t->{prod};
			my $to = $r->pick([ grep { $_ ne $cur } @PRODUCERS ]);
			$g->{prod}{ $t->{idx} } = $to;
			@steps = ({ k => 'pk', t => $t->{idx}, op => 'switch', prod => $to,
					sql => "ALTER TABLE %T SET (changelog_producer = '$to')" });
		}
		elsif ($m eq 'restart')
		{
			@steps = ({ k => 'restart' });
			$g->{prepared} = {};     # gone with the session
		}
		else                       { @steps = ({ k => 'sql', sql => 'CHECKPOINT' }); }
		return { id => $id, steps => \@steps, tables => [ $t->{idx} ], auto => 1 };
	}
	if ($kind eq 'auto')
	{
		my $t = $r->pick($g->{tables});
		my $s;
		do { $s = gen_op($g, $t, $ctx) } while ($s->{k} eq 'check');
		return { id => $id, steps => [$s], tables => [ $t->{idx} ], auto => 1 };
	}

	$ctx->{in_txn} = 1;
	my $nt = $r->weighted({ 1 => 6, 2 => 3, 3 => 1 });
	my @tabs = ($r->shuffle(@{ $g->{tables} }))[ 0 .. $nt - 1 ];
	my @steps;
	my $iso = $r->weighted({ '' => 85, ' ISOLATION LEVEL REPEATABLE READ' => 10, ' ISOLATION LEVEL SERIALIZABLE' => 5 });
	push @steps, { k => 'sql', sql => "BEGIN$iso" };
	my @sp;                     # open savepoints
	my $nops = 1;
	$nops++ while $nops < 12 && $r->chance(0.72);
	my $ended;
	for (1 .. $nops)
	{
		my $x = $r->below(100);
		if ($x < 10)
		{
			my $name = 's' . (++$g->{sp});
			push @sp, $name;
			push @steps, { k => 'sql', sql => "SAVEPOINT $name" };
		}
		elsif ($x < 17 && @sp)
		{
			my $i = $r->below(scalar @sp);
			if ($r->chance(0.5))
			{
				push @steps, { k => 'sql', sql => "ROLLBACK TO SAVEPOINT $sp[$i]" };
				$ctx->{cursor} = {};      # those declared after it are gone
				splice(@sp, $i + 1);
			}
			else
			{
				push @steps, { k => 'sql', sql => "RELEASE SAVEPOINT $sp[$i]" };
				splice(@sp, $i);
			}
		}
		my $t = $r->pick(\@tabs);
		my $s = gen_op($g, $t, $ctx);
		if ($s->{op} && $s->{op} =~ /^fail/)
		{
			if ($r->chance(0.9))
			{
				# where it does not fail (no row matched; a form pkmerge
				# takes), what it did is compared before it is rolled back
				my $name = 'f' . (++$g->{sp});
				push @steps, { k => 'sql', sql => "SAVEPOINT $name" }, $s;
				push @steps, { k => 'check', t => $t->{idx} } if $r->chance(0.5);
				push @steps, { k => 'sql', sql => "ROLLBACK TO SAVEPOINT $name" };
				push @steps, { k => 'sql', sql => "RELEASE SAVEPOINT $name" } if $r->chance(0.5);
				next;
			}
			# left unhandled: the transaction ends here
			push @steps, $s;
			$ended = 1;
			last;
		}
		push @steps, $s;
		push @steps, { k => 'check', t => $t->{idx} } if $s->{k} ne 'check' && $r->chance(0.08);
	}
	my $commit = $ended || $r->chance(0.88);
	# one in ten that can still commit goes through PREPARE TRANSACTION and
	# then COMMIT PREPARED or ROLLBACK PREPARED, as a transaction manager's
	if (!$ended && $r->chance(0.1))
	{
		my $gid = "fz_$id";
		# half of those rolled back compact a table they write first: its
		# commit's record takes the id after the compaction's, and the next
		# commit takes the compaction's again, after that dead record
		splice(@steps, 1, 0, { k => 'pk', t => $tabs[0]{idx}, op => 'compact',
				sql => "SELECT pk_compact('%T', true)" })
		  if !$commit && $r->chance(0.5);
		push @steps, { k => 'sql', sql => "PREPARE TRANSACTION '$gid'" },
		  { k => 'sql', sql => ($commit ? 'COMMIT' : 'ROLLBACK') . " PREPARED '$gid'" };
	}
	else
	{
		push @steps, { k => 'sql', sql => $commit ? 'COMMIT' : 'ROLLBACK' };
	}
	return { id => $id, steps => \@steps, tables => [ sort { $a <=> $b } map { $_->{idx} } @tabs ] };
}

1;
