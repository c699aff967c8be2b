# PkFuzz::Rng: the fuzzer's own pseudo-random generator (xoshiro128**),
# so that a seed gives the same transactions on every machine and perl,
# whatever else calls rand().
package PkFuzz::Rng;

use strict;
use warnings;

use constant M32 => 0xFFFFFFFF;

sub _rotl { my ($x, $k) = @_; return (($x << $k) | ($x >> (32 - $k))) & M32; }

# murmur3's finalizer: spreads a small seed over all bits
sub _mix
{
	my ($h) = @_;
	$h &= M32;
	$h ^= $h >> 16;
	$h = ($h * 0x85ebca6b) & M32;
	$h ^= $h >> 13;
	$h = ($h * 0xc2b2ae35) & M32;
	$h ^= $h >> 16;
	return $h;
}

sub new
{
	my ($class, $seed) = @_;
	my @s = map { _mix($seed + $_ * 0x9E3779B9) } 1 .. 4;
	$s[0] ||= 1;
	return bless { s => \@s }, $class;
}

sub next32
{
	my ($r) = @_;
	my $s = $r->{s};
	my $result = (_rotl(($s->[1] * 5) & M32, 7) * 9) & M32;
	my $t = ($s->[1] << 9) & M32;
	$s->[2] ^= $s->[0];
	$s->[3] ^= $s->[1];
	$s->[1] ^= $s->[2];
	$s->[0] ^= $s->[3];
	$s->[2] ^= $t;
	$s->[3] = _rotl($s->[3], 11);
	return $result;
}

# an integer in [0, n)
sub below { my ($r, $n) = @_; return $n <= 1 ? 0 : $r->next32 % $n; }

# an integer in [lo, hi]
sub between { my ($r, $lo, $hi) = @_; return $lo + $r->below($hi - $lo + 1); }

# true with probability p
sub chance { my ($r, $p) = @_; return $r->next32 < $p * 4294967296; }

sub pick { my ($r, $list) = @_; return $list->[ $r->below(scalar @$list) ]; }

# pick a key of { name => weight }, in sorted key order
sub weighted
{
	my ($r, $w) = @_;
	my @k = sort grep { $w->{$_} > 0 } keys %$w;
	my $total = 0;
	$total += $w->{$_} for @k;
	my $x = $r->next32 / 4294967296 * $total;
	for my $k (@k)
	{
		return $k if $x < $w->{$k};
		$x -= $w->{$k};
	}
	return $k[-1];
}

# a shuffled copy
sub shuffle
{
	my ($r, @l) = @_;
	for (my $i = $#l; $i > 0; $i--)
	{
		my $j = $r->below($i + 1);
		@l[ $i, $j ] = @l[ $j, $i ];
	}
	return @l;
}

1;
