#!/usr/bin/env python3
"""A model of the compaction picker (src/maint_compaction.c: count_small,
sorted_runs, ratio_count, pick) under 1-row commits, to weigh a change of
the picker before it is built and measured on a server.

Each commit adds a level-0 run of --rows-per-commit random keys (1); when the table is due
(the effective sorted-run count reaches the compaction trigger) the picker
runs, or, with --speed, the worker does once it is done with its last
compaction (which takes rows/speed commits); at the stop trigger the
committer compacts at once.  Runs are key sets; a run's bytes are its rows
times --row-bytes plus a header, a run of up to 1.5 kB is kept in its
catalog row and weighs one page, a larger one its pages.  Prints rows
rewritten per commit, compactions, compactions of more than 5,000 rows and
the most runs seen, per seed.

  test/bench/compaction_sim.py                          a table at rest
  test/bench/compaction_sim.py --init 2:3000,3:14000,4:60000
                                 the same with levels 2-4 filled first
  test/bench/compaction_sim.py --commits 120000 --window 20000 --row-bytes 35
                                 after 100k commits, the last 20k commits'
                                 merges by pick ('small': small runs' tiers,
                                 'paimon': Paimon's pick, 'stop': at the stop
                                 trigger), output level and size

The model leaves out what the picker does not see (concurrency, spills,
the catalog) and is not exact; a figure it gives is a hint for the server's
own (pk_snapshots' COMPACT rows tell the rows each compaction wrote).
"""
import argparse
import math
import random

BLCKSZ = 8192
INLINE_MAX = 1536
SMALL_RUNS_PER_SORTED_RUN = 8
SMALL_RUNS_MAX = 16


class Run:
    __slots__ = ('level', 'keys', 'max_seq', 'run_id')

    def __init__(self, level, keys, max_seq, run_id):
        self.level, self.keys, self.max_seq, self.run_id = level, keys, max_seq, run_id


class Model:
    def __init__(self, a):
        self.a = a
        self.merges = {}
        self.kind = None

    def run_bytes(self, r):
        return len(r.keys) * self.a.row_bytes + 40

    def run_size(self, r):
        b = self.run_bytes(r)
        return BLCKSZ if b <= INLINE_MAX else math.ceil(b / (BLCKSZ - 24)) * BLCKSZ

    @staticmethod
    def l0_order(r):
        return (r.max_seq, r.run_id)

    def sorted_runs(self, runs):
        l0 = sorted((r for r in runs if r.level == 0), key=self.l0_order, reverse=True)
        srs = [[r] for r in l0]
        for level in range(1, self.a.num_levels):
            at = [r for r in runs if r.level == level]
            if at:
                srs.append(at)
        return [dict(level=s[0].level, runs=s,
                     size=sum(self.run_size(r) for r in s),
                     bytes=sum(self.run_bytes(r) for r in s)) for s in srs]

    def count_small(self, runs):
        largest, n = 0, 0
        for r in runs:
            if r.level == 0:
                largest = max(largest, self.run_bytes(r))
                n += 1
        for level in range(1, max(r.level for r in runs) + 1):
            at = [r for r in runs if r.level == level]
            if at:
                largest = max(largest, sum(self.run_bytes(r) for r in at))
                n += 1
        newest_large = None
        for r in runs:
            if (r.level == 0 and self.run_bytes(r) * self.a.small_run_ratio >= largest and
                    (newest_large is None or self.l0_order(r) > self.l0_order(newest_large))):
                newest_large = r
        nsmall = sum(1 for r in runs if r.level == 0 and
                     (newest_large is None or self.l0_order(r) > self.l0_order(newest_large)))
        per = SMALL_RUNS_PER_SORTED_RUN
        # towards the stop trigger: every small run (--before), those
        # beyond SMALL_RUNS_MAX, where the worker is asked for them, or
        # (--fanin) those beyond their tier's quota
        if self.a.before:
            counted = nsmall
        elif self.a.fanin:
            members = {}
            for r in runs:
                if r.level == 0 and (newest_large is None or
                                     self.l0_order(r) > self.l0_order(newest_large)):
                    tier = self.tier(len(r.keys))
                    members[tier] = members.get(tier, 0) + 1
            counted = sum(max(0, m - self.quota(t)) for t, m in members.items())
        else:
            counted = max(0, nsmall - SMALL_RUNS_MAX)
        return nsmall, n - nsmall + (counted + per - 1) // per

    def ratio_count(self, srs, first, start, limit, by_bytes):
        key = 'bytes' if by_bytes else 'size'
        size, c = sum(s[key] for s in srs[first:start]), start
        while c < limit:
            if size * (100 + self.a.size_ratio) / 100 < srs[c][key]:
                break
            size += srs[c][key]
            c += 1
        return c

    def pick(self, runs, srs):
        """maint_compaction.c's pick(): (sorted runs to merge, output level)."""
        if self.a.before:
            self.kind = 'before'
            return self.pick_before(runs, srs)
        n, nsmall = len(srs), self.count_small(runs)[0]
        self.kind = 'small'
        if self.a.fanin:
            c = self.tier_count(srs, nsmall)
            if c >= 2:
                return c, 0
        elif nsmall >= SMALL_RUNS_MAX:
            c = self.ratio_count(srs, 0, 1, nsmall, True)
            if c < SMALL_RUNS_MAX:
                c = (self.ratio_count(srs, 0, nsmall - SMALL_RUNS_MAX + 1, nsmall, True)
                     if nsmall > SMALL_RUNS_MAX else 0)
            if c >= 2:
                return c, 0
        nrest, trigger, count = n - nsmall, self.a.trigger, 0
        self.kind = 'paimon'
        if nrest >= trigger:
            young = sum(s['size'] for s in srs[nsmall:-1])
            if young * 100 > self.a.max_size_amplification * srs[-1]['size']:
                count = n
            else:
                count = self.ratio_count(srs, nsmall, nsmall + 1, n, False)
                if count < nsmall + 2 and nrest > trigger:
                    count = self.ratio_count(srs, nsmall, nsmall + nrest - trigger + 1,
                                             n, False)
            if count < nsmall + 2:
                count = 0
        return self.output_level(srs, count)

    def tier_count(self, srs, nsmall):
        """--fanin: the youngest small runs up to the first full tier (runs
        of fewer than SMALL_RUNS_MAX rows: SMALL_RUNS_MAX of them; then
        --fanin runs of SMALL_RUNS_MAX * fanin**k up to the next power),
        and the runs of that tier or a lower one after it."""
        members = {}
        rows = [sum(len(r.keys) for r in srs[c]['runs']) for c in range(nsmall)]
        for c in range(nsmall):
            tier = self.tier(rows[c])
            members[tier] = members.get(tier, 0) + 1
            if members[tier] >= self.quota(tier):
                while c + 1 < nsmall and self.tier(rows[c + 1]) <= tier:
                    c += 1
                return c + 1
        return 0

    def tier(self, rows):
        """--fanin: a small run's tier by its rows (-1: fewer than SMALL_RUNS_MAX)."""
        return (-1 if rows < SMALL_RUNS_MAX else
                int(math.log(rows / SMALL_RUNS_MAX, self.a.fanin) + 1e-9))

    def quota(self, tier):
        return SMALL_RUNS_MAX if tier < 0 else self.a.fanin

    def pick_before(self, runs, srs):
        """The picker before small runs left Paimon's pick (--before)."""
        n, trigger = len(srs), self.a.trigger
        nsmall, effective = self.count_small(runs)
        if nsmall >= SMALL_RUNS_PER_SORTED_RUN:
            c = self.ratio_count(srs, 0, 1, nsmall, True)
            if c < 2:
                start = (nsmall - SMALL_RUNS_MAX + 1 if nsmall > SMALL_RUNS_MAX
                         else nsmall - SMALL_RUNS_PER_SORTED_RUN + 2)
                c = self.ratio_count(srs, 0, start, nsmall, True)
            if c >= 2:
                return c, 0
        count = 0
        if effective >= trigger:
            young = sum(s['size'] for s in srs[:-1])
            if young * 100 > self.a.max_size_amplification * srs[-1]['size']:
                count = n
            else:
                count = self.ratio_count(srs, 0, 1, n, False)
                if count < 2 and effective > trigger:
                    count = self.ratio_count(srs, 0, min(n, nsmall + effective - trigger + 1),
                                             n, False)
        return self.output_level(srs, count)

    def output_level(self, srs, count):
        n, bottom = len(srs), self.a.num_levels - 1
        if count < 2:
            return 0, 0
        out = bottom if count == n else max(0, srs[count]['level'] - 1)
        if out == 0:
            while count < n:
                level = srs[count]['level']
                count += 1
                if level > 0:
                    out = level
                    break
            if count == n:
                out = bottom
        return count, min(out, bottom)

    def due(self, runs):
        """compact_due() short of the stop trigger."""
        nsmall, effective = self.count_small(runs)
        if self.a.before:
            return effective >= self.a.trigger
        if self.a.fanin:
            small_due = self.tier_count(self.sorted_runs(runs), nsmall) >= 2
        else:
            small_due = nsmall >= SMALL_RUNS_MAX
        nrest = len(self.sorted_runs(runs)) - nsmall
        return nrest >= self.a.trigger or small_due

    def simulate(self, seed):
        a = self.a
        rnd = random.Random(seed)
        runs = [Run(a.num_levels - 1, set(range(a.keys)), 0, 0)]
        next_id = 1
        for level, rows in a.init:
            runs.append(Run(level, set(rnd.sample(range(a.keys), rows)), 0, next_id))
            next_id += 1
        rewritten = compactions = large = most_runs = busy_until = run_sum = 0
        for commit in range(1, a.commits + 1):
            runs.append(Run(0, set(rnd.sample(range(a.keys), a.rows_per_commit)),
                            commit, next_id))
            next_id += 1
            most_runs = max(most_runs, len(runs))
            run_sum += len(runs)
            _, effective = self.count_small(runs)
            stop = effective >= a.stop_trigger
            if not stop and (not self.due(runs) or commit < busy_until):
                continue
            srs = self.sorted_runs(runs)
            count, out = self.pick(runs, srs)
            if count == 0:
                continue
            inputs = [r for s in srs[:count] for r in s['runs']]
            keys = set().union(*(r.keys for r in inputs))
            for r in inputs:
                runs.remove(r)
            runs.append(Run(out, keys, max(r.max_seq for r in inputs), next_id))
            next_id += 1
            rewritten += len(keys)
            if commit > a.commits - a.window:
                kind = 'stop' if stop else self.kind
                key = (kind, out, 4 ** math.ceil(math.log(len(keys), 4)))
                seen = self.merges.setdefault(key, [0, 0])
                seen[0] += 1
                seen[1] += len(keys)
            compactions += 1
            large += len(keys) > 5000
            if a.speed and not stop:
                busy_until = commit + max(3, len(keys) // a.speed)
        return (round(rewritten / a.commits, 1), round(compactions / a.commits, 3),
                large, most_runs, round(run_sum / a.commits, 1))


def levels(text):
    return [tuple(int(x) for x in part.split(':')) for part in text.split(',') if part]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--commits', type=int, default=30000)
    p.add_argument('--keys', type=int, default=100000)
    p.add_argument('--rows-per-commit', type=int, default=1)
    p.add_argument('--init', type=levels, default=[], help='LEVEL:ROWS,... filled first')
    p.add_argument('--seeds', type=int, default=2)
    p.add_argument('--speed', type=int, default=0, help='rows the worker merges per commit')
    p.add_argument('--row-bytes', type=int, default=12)
    p.add_argument('--trigger', type=int, default=5)
    p.add_argument('--stop-trigger', type=int, default=8)
    p.add_argument('--num-levels', type=int, default=6)
    p.add_argument('--max-size-amplification', type=int, default=200)
    p.add_argument('--size-ratio', type=int, default=1)
    p.add_argument('--small-run-ratio', type=int, default=16)
    p.add_argument('--fanin', type=int, default=12,
                   help='small runs merge by tiers: 16 runs of fewer than 16 rows, '
                   'then this many runs of 16 * fanin**k rows and more (12, as '
                   'the server); 0: the earlier rule, the youngest the size ratio '
                   'joins once 16 are there')
    p.add_argument('--window', type=int, default=0,
                   help='print the merges of the last this many commits, by '
                   'pick, output level and rows (up to a power of 4)')
    p.add_argument('--before', action='store_true',
                   help='the picker before small runs left Paimon\'s pick')
    a = p.parse_args()
    m = Model(a)
    print('rows rewritten per commit, compactions per commit, of > 5000 rows, most runs, '
          'runs on average')
    for seed in range(1, a.seeds + 1):
        m.merges = {}
        print('seed %d:' % seed, *m.simulate(seed))
        for (kind, out, rows), (n, total) in sorted(m.merges.items()):
            print('  %-6s to level %d, up to %6d rows: %5d merges, %.2f rows per commit' %
                  (kind, out, rows, n, total / a.window))


if __name__ == '__main__':
    main()
