# A malloc-heavy Perl workload with deterministic output.  MIT licence.
use strict;
use warnings;
use Digest::MD5 qw(md5_hex);

my $n = shift // 200000;
my %h;
for my $i (0 .. $n - 1) {
    $h{"key$i"} = [ $i, "v" x ($i % 17), { a => $i * 2, b => "z" x ($i % 5) } ];
}
my $acc = '';
for my $k ((sort keys %h)[0 .. 999]) {
    $acc .= $k . ':' . $h{$k}[0] . $h{$k}[1] . $h{$k}[2]{a};
}
for my $i (grep { $_ % 3 == 0 } 0 .. $n - 1) { delete $h{"key$i"}; }
$acc .= scalar(keys %h);
my @list = map { sprintf("%08x", ($_ * 2654435761) % 4294967296) } 0 .. $n - 1;
my @sorted = sort @list;
$acc .= join(',', @sorted[0 .. 99]);
my $s = '';
$s .= chr(65 + $_ % 26) for 0 .. 500000;
my @parts = split /Q/, $s;
$acc .= scalar(@parts) . length($s);
my %count;
$count{$_}++ for split //, substr($s, 0, 100000);
$acc .= join('', map { "$_$count{$_}" } sort keys %count);
print md5_hex($acc), "\n";
