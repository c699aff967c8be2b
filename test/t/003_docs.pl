# 003_docs.pl: the docs describe the product.  README.md, doc/*.md, the
# sources, SQL and tests speak of versions and measured figures, never of
# the work's history ("session 4 added", "issue 3", "(issue 4)"); the
# README's "Using it" shows pk_changes, and its SQL and outputs are those
# that sql/readme.sql runs and expected/readme.out holds, so the
# section gives what it says when run as written.  Needs no server.  Reads
# the tree this file is in (make test runs a copy of README.md, doc/, src/,
# sql/, expected/ and test/: test/common.sh).
use strict;
use warnings;
use FindBin;
use Test::More;

my $test = "$FindBin::Bin/..";
my $top = "$test/..";

sub slurp
{
	my ($path) = @_;
	open my $fh, '<', $path or die "cannot read $path: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

# lines without trailing blanks (psql pads its header lines)
sub normalized
{
	my ($text) = @_;
	$text =~ s/[ \t]+$//mg;
	return $text;
}

# --- history wording -------------------------------------------------------
my @history = (
	qr/\bsessions?\s+\d/i,             # session 4, sessions 3 and 4
	qr/\bissues?\s+#?\d/i,             # issue 3, issue #4
	qr/\(issues?\b/i,                  # (issue 3)
	qr/\bfixed in (?:session|issue)/i);
my @files = ("$top/README.md", glob("$top/doc/*.md"), glob("$top/src/*.[ch]"),
	glob("$top/sql/*.sql"), glob("$test/setup/*.sql"),
	glob("$test/t/*.p[lm]"), glob("$test/*.sh"), glob("$test/*.conf"),
	glob("$test/isolation/specs/*.spec"), glob("$test/demo/*.sql"), glob("$test/bench/*"));
ok(scalar(grep { /README/ } @files) == 1 && scalar(grep { m{/doc/} } @files) >= 2
	  && scalar(grep { m{/src/} } @files) >= 10,
	'README.md, doc/*.md and src/ are there to check');
my @hits;
for my $f (@files)
{
	next if $f =~ m{003_docs\.pl$} || !-f $f;
	my $n = 0;
	for my $line (split /\n/, slurp($f))
	{
		$n++;
		push @hits, "$f:$n: $line" if grep { $line =~ $_ } @history;
	}
}
is(join("\n", @hits), '', 'no wording about the work\'s history');

# --- README "Using it" -----------------------------------------------------
my $readme = slurp("$top/README.md");
my ($usage) = $readme =~ /^## Using it\n(.*?)(?=^## )/ms;
ok(defined $usage, 'README has a "Using it" section');
$usage //= '';
my @sql = $usage =~ /^```sql\n(.*?)^```$/msg;
my @out = $usage =~ /^```text\n(.*?)^```$/msg;
ok(scalar(@sql) >= 1 && scalar(@out) >= 1, 'it shows SQL and its output');
ok(scalar(grep { /\bpk_changes\(/ } @sql), 'its SQL reads the stream with pk_changes');
ok(scalar(grep { /^\s+\d+ \| -U +\| .*"amount": 100\.00/m } @out)
	  && scalar(grep { /^\s+\d+ \| \+U +\| .*"amount": 80\.00/m } @out),
	'its output shows the lookup stream of 100 -> 80');

my $script = normalized(slurp("$top/sql/readme.sql"));
my $expected = normalized(slurp("$top/expected/readme.out"));
for my $i (0 .. $#sql)
{
	ok(index($script, normalized($sql[$i])) >= 0,
		"SQL block " . ($i + 1) . " is in sql/readme.sql as written");
}
# an output block holds one or more results (blank lines between them),
# each one in expected/readme.out, in the order shown
my $pos = 0;
for my $i (0 .. $#out)
{
	my $found = 1;
	for my $result (split /\n\n+/, normalized($out[$i]))
	{
		my $at = index($expected, $result . "\n", $pos);
		$found = 0 if $at < 0;
		$pos = $at + length($result) if $at >= 0;
	}
	ok($found, "output block " . ($i + 1) . " is what expected/readme.out shows");
}

done_testing();
