# 039_meta.pl: META.json, the PGXN distribution metadata, follows the PGXN
# Meta Spec 1.0.0 (https://pgxn.org/spec/): every required key is there
# with the type the spec gives it, the optional ones used have theirs,
# versions are Semantic Versions, and what it says agrees with the tree:
# the version is pkchangelog.control's default_version (and the Debian
# package's), the license the LICENSE file's, the files it names exist.
# Needs no server.
use strict;
use warnings;
use FindBin;
use JSON::PP;
use PostgreSQL::Test::Utils qw(slurp_file);
use Test::More;

my $top = "$FindBin::Bin/../..";

sub slurp { return slurp_file($_[0]); }

my $meta = eval { JSON::PP->new->decode(slurp("$top/META.json")) };
ok(ref $meta eq 'HASH', 'META.json is a JSON object') or BAIL_OUT($@ // 'not an object');

# the spec's types
my $semver = qr/^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;
my $range_part = qr/(?:(?:[<>]=?|==|!=)\s*)?(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)/;
my $range = qr/^(?:0|$range_part(?:\s*,\s*$range_part)*)$/;
my %licenses = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1 artistic_2 bsd
  freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1 lgpl_3_0 mit mozilla_1_0
  mozilla_1_1 openssl perl_5 postgresql qpl_1_0 ssleay sun zlib open_source
  restricted unrestricted unknown);
sub is_string { my ($v) = @_; return defined $v && !ref $v && length $v; }
sub is_strings { my ($v) = @_; return is_string($v) || (ref $v eq 'ARRAY' && @$v && !grep { !is_string($_) } @$v); }

# required keys
for my $key (qw(name abstract maintainer license provides meta-spec version))
{
	ok(exists $meta->{$key}, "required key '$key' is there");
}
like($meta->{name} // '', qr/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'name is a name without spaces or slashes');
ok(is_string($meta->{abstract}), 'abstract is a string');
ok(is_strings($meta->{maintainer}), 'maintainer is a string or a list of them');
my @license = ref $meta->{license} eq 'ARRAY' ? @{ $meta->{license} } : ($meta->{license});
ok(is_strings($meta->{license}) && !(grep { !$licenses{ $_ // '' } } @license),
	'license is one of the spec\'s license strings');
like($meta->{version} // '', $semver, 'version is a Semantic Version');
is(ref $meta->{'meta-spec'}, 'HASH', 'meta-spec is an object');
is($meta->{'meta-spec'}{version}, '1.0.0', 'meta-spec version is 1.0.0');
is(ref $meta->{provides}, 'HASH', 'provides is an object');
for my $ext (sort keys %{ $meta->{provides} // {} })
{
	my $p = $meta->{provides}{$ext};
	ok(is_string($p->{file}) && -f "$top/$p->{file}", "provides.$ext.file names a file of the distribution");
	like($p->{version} // '', $semver, "provides.$ext.version is a Semantic Version");
	ok(!exists $p->{docfile} || -f "$top/$p->{docfile}", "provides.$ext.docfile, if given, is a file");
	ok(!exists $p->{abstract} || is_string($p->{abstract}), "provides.$ext.abstract, if given, is a string");
}

# optional keys, where used
ok(!exists $meta->{description} || is_string($meta->{description}), 'description is a string');
ok(!exists $meta->{release_status} || $meta->{release_status} =~ /^(?:stable|testing|unstable)$/,
	'release_status is stable, testing or unstable');
ok(!exists $meta->{tags} || (ref $meta->{tags} eq 'ARRAY' && !grep { !is_string($_) } @{ $meta->{tags} }),
	'tags is a list of strings');
if (exists $meta->{prereqs})
{
	my $bad = 0;
	for my $phase (keys %{ $meta->{prereqs} })
	{
		$bad++ unless $phase =~ /^(?:configure|build|test|runtime|develop)$/;
		for my $rel (keys %{ $meta->{prereqs}{$phase} })
		{
			$bad++ unless $rel =~ /^(?:requires|recommends|suggests|conflicts)$/;
			for my $name (keys %{ $meta->{prereqs}{$phase}{$rel} })
			{
				$bad++ unless ($meta->{prereqs}{$phase}{$rel}{$name} // '') =~ $range;
			}
		}
	}
	is($bad, 0, 'prereqs are phases of relations of version ranges');
	like($meta->{prereqs}{runtime}{requires}{PostgreSQL} // '', qr/15\.0\.0/, 'it requires PostgreSQL 15 to run');
}
if (exists $meta->{resources})
{
	my $r = $meta->{resources};
	my $bad = grep { !/^(?:homepage|bugtracker|repository|x_\w+|X_\w+)$/ } keys %$r;
	$bad++ if exists $r->{homepage} && !is_string($r->{homepage});
	$bad++ if exists $r->{bugtracker} && (ref $r->{bugtracker} ne 'HASH'
		|| grep { !/^(?:web|mailto)$/ } keys %{ $r->{bugtracker} });
	$bad++ if exists $r->{repository} && (ref $r->{repository} ne 'HASH'
		|| grep { !/^(?:url|web|type)$/ } keys %{ $r->{repository} });
	is($bad, 0, 'resources has the spec\'s keys and types');
}

# what it says agrees with the tree
my ($default_version) = slurp("$top/pkchangelog.control") =~ /^default_version\s*=\s*'([^']+)'/m;
my $control_semver = $default_version =~ /^\d+\.\d+$/ ? "$default_version.0" : $default_version;
is($meta->{version}, $control_semver, 'version is pkchangelog.control\'s default_version as a Semantic Version');
is($meta->{provides}{pkchangelog}{version}, $control_semver, 'the extension it provides has that version too');
like(slurp("$top/LICENSE"), qr/^PostgreSQL License$/m, 'LICENSE is the PostgreSQL License, which license says');
is($meta->{license}, 'postgresql', 'license is postgresql');

# the Debian package has the same name and version
my ($deb_version) = slurp("$top/debian/changelog") =~ /^pkchangelog \(([^)]+)\)/;
is($deb_version, $meta->{version}, 'debian/changelog\'s version is META.json\'s');
like(slurp("$top/debian/control"), qr/^Package: postgresql-15-pkchangelog$/m,
	'debian/control builds postgresql-15-pkchangelog');

done_testing();
