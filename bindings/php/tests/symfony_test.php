<?php
/*
 * Tkshm\Symfony (bindings/php/lib/): Symfony's RateLimiter on a tkshm
 * table.  One calling function, drive(), runs the same steps through
 * Symfony's own RateLimiterFactory (InMemoryStorage) and through
 * TkshmRateLimiterFactory, on one timeline: symfony_clock.php stands in
 * for the microtime()/usleep() Symfony calls, and tkshm's factory takes
 * the same clock.  For each policy the decisions, remaining tokens,
 * retry times and reservations agree except where the README's
 * "Symfony RateLimiter" section says they differ, and each difference is
 * pinned here with both sides' values.  Also: reservations never admit
 * more than the policy when counted at the time they act, bad options
 * throw Symfony's exceptions with Symfony's messages, one Tkshm\Table per
 * table and process, and the system clock when no clock is given.
 *
 *   php -n -d extension=<build>/php/tkshm.so symfony_test.php
 *
 * Needs Debian's php-symfony-rate-limiter (its autoloader in
 * /usr/share/php); exits 77 (skipped) without it.
 */

declare(strict_types=1);

require __DIR__ . '/symfony_clock.php';     // before any Symfony code runs
require __DIR__ . '/harness.php';

const RL_AUTOLOAD = '/usr/share/php/Symfony/Component/RateLimiter/autoload.php';
if (!is_file(RL_AUTOLOAD)) {
    fwrite(STDERR, "skipped: Symfony's RateLimiter is not installed (apt-get install php-symfony-rate-limiter)\n");
    exit(77);
}
require RL_AUTOLOAD;
require dirname(__DIR__) . '/lib/autoload.php';

use Symfony\Component\RateLimiter\Exception\MaxWaitDurationExceededException;
use Symfony\Component\RateLimiter\Exception\RateLimitExceededException;
use Symfony\Component\RateLimiter\Exception\ReserveNotSupportedException;
use Symfony\Component\RateLimiter\LimiterInterface;
use Symfony\Component\RateLimiter\Policy\NoLimiter;
use Symfony\Component\RateLimiter\RateLimit;
use Symfony\Component\RateLimiter\RateLimiterFactory;
use Symfony\Component\RateLimiter\Storage\InMemoryStorage;
use Tkshm\Symfony\TkshmLimiter;
use Tkshm\Symfony\TkshmRateLimiterFactory;

/* The timeline's origin: a whole hour, so that tkshm's epoch-aligned
 * windows and Symfony's windows opened by a first hit at T0 coincide. */
const T0 = 1699999200.0;

function symfony_factory(array $config): RateLimiterFactory
{
    return new RateLimiterFactory($config, new InMemoryStorage());
}

function tkshm_factory(array $config): TkshmRateLimiterFactory
{
    static $n = 0;
    $n++;
    return new TkshmRateLimiterFactory($config + ['table' => temp_dir() . "/t$n", 'slots' => 64],
        static fn (): float => SymClock::$now);
}

/* Seconds since T0 of a RateLimit's retry time. */
function retry_of(RateLimit $r): float
{
    return round((float) $r->getRetryAfter()->format('U.u') - T0, 6);
}

/*
 * The calling code, the same for both factories: what an application does
 * with a factory, step by step.  A step is [t (seconds after T0), op,
 * tokens, maxTime]; op is consume, reserve, wait (the last reservation's
 * wait()) or reset.  Returns one record per step.
 */
function drive(object $factory, array $steps, string $key = 'client'): array
{
    $limiter = $factory->create($key);
    check_true($limiter instanceof LimiterInterface, 'a LimiterInterface');
    $out = [];
    $reservation = null;
    foreach ($steps as $s) {
        [$t, $op] = $s;
        $tokens = $s[2] ?? 1;
        SymClock::$now = T0 + $t;
        try {
            switch ($op) {
            case 'consume':
                $r = $limiter->consume($tokens);
                $out[] = ['t' => $t, 'op' => "consume $tokens", 'accepted' => $r->isAccepted(),
                    'remaining' => $r->getRemainingTokens(), 'retry' => retry_of($r), 'limit' => $r->getLimit()];
                break;
            case 'reserve':
                $reservation = $limiter->reserve($tokens, $s[3] ?? null);
                $r = $reservation->getRateLimit();
                $out[] = ['t' => $t, 'op' => "reserve $tokens", 'act' => round($reservation->getTimeToAct() - T0, 6),
                    'wait' => round($reservation->getWaitDuration(), 6), 'accepted' => $r->isAccepted(),
                    'remaining' => $r->getRemainingTokens(), 'retry' => retry_of($r), 'limit' => $r->getLimit()];
                break;
            case 'wait':
                $reservation->wait();
                $out[] = ['t' => $t, 'op' => 'wait', 'until' => round(SymClock::$now - T0, 3)];
                break;
            case 'reset':
                $limiter->reset();
                $out[] = ['t' => $t, 'op' => 'reset'];
                break;
            }
        } catch (\Throwable $e) {
            $rec = ['t' => $t, 'op' => "$op $tokens", 'throws' => get_class($e)];
            if ($e instanceof MaxWaitDurationExceededException) {
                $rec['retry'] = retry_of($e->getRateLimit());
            }
            $out[] = $rec;
        }
    }
    return $out;
}

/* Runs $steps through both factories from T0: [symfony's, tkshm's]. */
function both(array $config, array $steps): array
{
    SymClock::$now = T0;
    $sf = drive(symfony_factory($config), $steps);
    SymClock::$now = T0;
    $tk = drive(tkshm_factory($config), $steps);
    check_same(count($sf), count($tk), 'records');
    return [$sf, $tk];
}

/*
 * Compares the two runs step by step.  Always equal: the op, accepted,
 * the exception thrown, the limit, a reservation's time to act.  The
 * remaining tokens are equal where Symfony's are not negative (its token
 * bucket and fixed window go below 0 after a reservation; tkshm's never
 * do).  A denial's retry time: tkshm's is when the tokens are there, to
 * the millisecond; Symfony's is whole intervals from now, floored to the
 * second, so they are equal or $slack seconds apart at most; an
 * admission's is now for tkshm (Symfony: now floored, or its sliding
 * window's end).  $remSlack: a sliding window's remaining may be that
 * many above tkshm's on Symfony's side (it floors the estimate, tkshm the
 * room left).  $except: steps (indexes) compared by the caller.
 */
function compare(array $sf, array $tk, float $slack, array $except = [], int $remSlack = 0): void
{
    foreach ($sf as $i => $a) {
        if (in_array($i, $except, true)) {
            continue;
        }
        $b = $tk[$i];
        $at = "step $i ({$a['t']} s, {$a['op']}): symfony " . json_encode($a) . ' tkshm ' . json_encode($b);
        check_same($a['op'], $b['op'], $at);
        check_same($a['throws'] ?? null, $b['throws'] ?? null, $at);
        if (isset($a['throws']) || $a['op'] === 'reset') {
            continue;
        }
        if ($a['op'] === 'wait') {
            check_same($a['until'], $b['until'], $at);
            continue;
        }
        check_same($a['accepted'], $b['accepted'], $at);
        check_same($a['limit'], $b['limit'], $at);
        $over = max(0, $a['remaining']) - $b['remaining'];
        check_true($over >= 0 && $over <= $remSlack, "$at: remaining");
        if (isset($a['act'])) {
            check_same($a['act'], $b['act'], $at);
            check_same($a['wait'], $b['wait'], $at);
        }
        if ($b['accepted']) {
            check_same(round((float) $a['t'], 6), $b['retry'], "$at: an admission's retry time is now");
        } else {
            check_true(abs($a['retry'] - $b['retry']) <= $slack, "$at: retry times more than $slack s apart");
        }
    }
}

/* ---- token_bucket ---- */

const TB = ['id' => 'api', 'policy' => 'token_bucket', 'limit' => 3,
    'rate' => ['interval' => '2 seconds', 'amount' => 1]];

test('token_bucket: the same calling code decides alike on Symfony and tkshm', function () {
    [$sf, $tk] = both(TB, [
        [0, 'consume'], [0, 'consume'], [0, 'consume'],     // 0..2: the burst
        [0, 'consume'], [0.5, 'consume'],                   // 3, 4: empty
        [2, 'consume'], [2.5, 'consume'], [3.9, 'consume'], // 5: one refilled
        [4, 'consume'],
        [10, 'consume', 2], [10, 'consume', 2],             // 9: 3 back, 10: 1 left
        [20, 'consume', 3],
        [20, 'reserve', 1],                                  // 12: booked at +2 s
        [20, 'reserve', 2, 3.0],                             // 13: 6 s > 3: throws
        [20, 'reserve', 2],                                  // 14: booked at +6 s
        [20.1, 'consume'], [23, 'consume'],                  // 15, 16: all booked
        [23, 'reserve', 4],                                  // 17: more than the burst
        [23, 'reset'], [23, 'consume', 3], [23, 'consume'],
    ]);
    compare($sf, $tk, 2.0, [7, 15, 16]);
    // 7: 1.9 s into the interval that began with the refill at 2 s.
    // tkshm: the token is there at 4 s (when step 8 gets it); Symfony
    // counts a whole interval from now, floored: 5 s.
    check_same([false, 0, 5.0], [$sf[7]['accepted'], $sf[7]['remaining'], $sf[7]['retry']], 'symfony, step 7');
    check_same([false, 0, 4.0], [$tk[7]['accepted'], $tk[7]['remaining'], $tk[7]['retry']], 'tkshm, step 7');
    // 15, 16: tokens booked through 26 s.  Symfony's remaining goes
    // negative (its bucket owes 3), tkshm's stays 0; the next token is
    // free at 28 s (tkshm: 28 both times; Symfony 28, then 29).
    check_same([false, -3, 28.0], [$sf[15]['accepted'], $sf[15]['remaining'], $sf[15]['retry']], 'symfony, step 15');
    check_same([false, 0, 28.0], [$tk[15]['accepted'], $tk[15]['remaining'], $tk[15]['retry']], 'tkshm, step 15');
    check_same([false, -2, 29.0], [$sf[16]['accepted'], $sf[16]['remaining'], $sf[16]['retry']], 'symfony, step 16');
    check_same([false, 0, 28.0], [$tk[16]['accepted'], $tk[16]['remaining'], $tk[16]['retry']], 'tkshm, step 16');
    // the reservations: act at +2 s and +6 s, not accepted now (as Symfony)
    check_same([22.0, false], [$tk[12]['act'], $tk[12]['accepted']], 'reservation 1');
    check_same([26.0, false], [$tk[14]['act'], $tk[14]['accepted']], 'reservation 2');
    check_same(MaxWaitDurationExceededException::class, $tk[13]['throws'], 'maxTime 3 s');
    check_same(\InvalidArgumentException::class, $tk[17]['throws'], 'more than the burst');
});

test('token_bucket: reserve, wait() and consume on one timeline', function () {
    [$sf, $tk] = both(TB, [
        [0, 'consume', 3],
        [0, 'reserve', 1], [0, 'wait'],          // waits until 2 s
        [2, 'consume'],                          // the reservation took it
        [2, 'reserve', 2, 4.0], [2, 'wait'],     // until 6 s
        [6, 'consume'], [7.999, 'consume'], [8, 'consume'],
        [8, 'reserve', 1, 0.0],                  // 9: maxTime 0
        [8, 'reserve', 0],
    ]);
    compare($sf, $tk, 2.0, [8, 9, 10]);
    check_same(2.0, $tk[2]['until'], 'wait() sleeps until the time to act');
    check_same(6.0, $tk[5]['until'], 'wait() sleeps until the time to act');
    check_same([false, false, true], [$tk[6]['accepted'], $tk[7]['accepted'], $tk[8]['accepted']], 'after the waits');
    // 8..10: 3 tokens at 0 s, 1 acting at 2 s, 2 at 6 s, 1 at 8 s: 7, all
    // that 3 + 8 s / 2 s allows.  Symfony's storage dropped the bucket at
    // 8 s (it expires burst x interval = 6 s after its last save at 2 s,
    // its debt of 2 tokens with it), so it starts a full bucket: 2 left
    // after step 8, and step 9 admits an 8th token at 8 s.  tkshm keeps
    // the debt: 0 left, and the 8th token is at 10 s, beyond maxTime 0.
    check_same([true, 2, true, 1, true, 1], [$sf[8]['accepted'], $sf[8]['remaining'], $sf[9]['accepted'],
        $sf[9]['remaining'], $sf[10]['accepted'], $sf[10]['remaining']], 'symfony, steps 8..10');
    check_same([true, 0], [$tk[8]['accepted'], $tk[8]['remaining']], 'tkshm, step 8');
    check_same(MaxWaitDurationExceededException::class, $tk[9]['throws'] ?? null, 'tkshm, step 9: maxTime 0');
    check_same(10.0, $tk[9]['retry'], "the exception's RateLimit: when the token is there");
    check_same([true, 0, 8.0], [$tk[10]['accepted'], $tk[10]['remaining'], $tk[10]['act']], 'tkshm, step 10: reserve(0)');
});

test('token_bucket: Symfony refills whole intervals, tkshm continuously', function () {
    // 10 tokens, 5 per 10 s: Symfony adds 5 at 10 s; tkshm one every 2 s.
    [$sf, $tk] = both(['id' => 'chunks', 'policy' => 'token_bucket', 'limit' => 10,
        'rate' => ['interval' => '10 seconds', 'amount' => 5]], [
        [0, 'consume', 10], [2, 'consume'], [5, 'consume'], [10, 'consume'], [10, 'consume', 5],
    ]);
    $got = static fn (array $rs) => array_map(static fn ($r) => [$r['accepted'], $r['remaining'], $r['retry']], $rs);
    check_same([[true, 0, 0.0], [false, 0, 12.0], [false, 0, 15.0], [true, 4, 10.0], [false, 4, 20.0]], $got($sf), 'symfony');
    check_same([[true, 0, 0.0], [true, 0, 2.0], [true, 0, 5.0], [true, 2, 10.0], [false, 2, 16.0]], $got($tk), 'tkshm');
});

/* ---- fixed_window ---- */

const FW = ['id' => 'login', 'policy' => 'fixed_window', 'limit' => 3, 'interval' => '10 seconds'];

test('fixed_window: the same calling code decides alike on Symfony and tkshm', function () {
    [$sf, $tk] = both(FW, [
        [0, 'consume'], [1, 'consume', 2], [2, 'consume'], [9.5, 'consume'],   // 0..3
        [10.5, 'consume'],                                                     // 4: a new window
        [12, 'reserve', 1], [12, 'consume'], [12.5, 'consume'],                // 5..7
        [13, 'reserve', 3, 5.0],                                               // 8: throws
        [13, 'reserve', 4],                                                    // 9: over the limit
        [14, 'reset'], [14, 'consume', 3],
    ]);
    // 4: Symfony's window restarts at this hit (10.5 s), tkshm's at 10 s:
    // the retry times are up to 1 s apart (Symfony floors ceil(end - now)
    // after now: 20 s at 12.5 s, 21 s at 13 s).
    compare($sf, $tk, 1.0);
    check_same([true, true], [$tk[5]['accepted'], $tk[6]['accepted']], 'reserve with tokens left acts now');
});

test('fixed_window: windows start at a key\'s first hit (Symfony), on the epoch grid (tkshm)', function () {
    // The first hit at 4 s: Symfony's window is [4, 14], tkshm's [0, 10).
    [$sf, $tk] = both(FW, [
        [4, 'consume', 3], [11, 'consume'], [15, 'consume'],
    ]);
    $got = static fn (array $rs) => array_map(static fn ($r) => [$r['accepted'], $r['retry']], $rs);
    check_same([[true, 4.0], [false, 14.0], [true, 15.0]], $got($sf), 'symfony');
    check_same([[true, 4.0], [true, 11.0], [true, 15.0]], $got($tk), 'tkshm');
});

test('fixed_window: a reservation acts in the next window and counts there', function () {
    [$sf, $tk] = both(FW, [
        [0, 'consume', 3],
        [5, 'reserve', 2], [5, 'consume'], [5, 'wait'],      // acts at 10 s
        [10.5, 'consume'], [10.5, 'consume'],
    ]);
    // Symfony counts the reserved 2 in the window they were asked in (its
    // remaining goes to -2) and starts the next window from 0 at the first
    // hit after it ends: 3 more there, 5 acting in it.  tkshm counts them
    // in the window they act in: 1 more, 3 in all.
    check_same([10.0, false, -2], [$sf[1]['act'], $sf[1]['accepted'], $sf[1]['remaining']], 'symfony reservation');
    check_same([10.0, false, 1], [$tk[1]['act'], $tk[1]['accepted'], $tk[1]['remaining']], 'tkshm reservation');
    check_same([false, 10.0], [$tk[2]['accepted'], $tk[2]['retry']], 'tkshm: the current window is spent');
    check_same(10.0, $tk[3]['until'], 'wait()');
    check_same([true, false], [$tk[4]['accepted'], $tk[5]['accepted']], 'tkshm: the window holds the reservation');
    check_same([true, true], [$sf[4]['accepted'], $sf[5]['accepted']], 'symfony: a fresh window');
});

/* ---- sliding_window ---- */

const SW = ['id' => 'search', 'policy' => 'sliding_window', 'limit' => 4, 'interval' => '10 seconds'];

test('sliding_window: the same calling code decides alike on Symfony and tkshm', function () {
    // Steps where the previous window's weighted count is a whole number.
    [$sf, $tk] = both(SW, [
        [0, 'consume', 4], [1, 'consume'],                   // 0, 1
        [15, 'consume'], [15, 'consume'], [15, 'consume'],   // 4 x 0.5 + 0, 1, 2
        [17.5, 'consume'], [17.5, 'consume'],                // 4 x 0.25 + 2, 3
        [30, 'consume', 2], [30, 'consume', 2], [30, 'consume'],
        [31, 'reserve', 1],
        [40.5, 'consume', 5],                                // more than the limit
    ]);
    // Symfony's retry time is always its current window's end, tkshm's
    // when the estimate has room: up to an interval apart.
    compare($sf, $tk, 10.0, [], 1);
    check_same(ReserveNotSupportedException::class, $tk[10]['throws'], 'reserve');
    check_same([false, false], [$sf[11]['accepted'], $tk[11]['accepted']], '5 of 4');
});

test('sliding_window: Symfony floors the estimate, tkshm does not', function () {
    // 4 hits in [0, 10), then at 10.5 s the estimate is 4 x 0.95 = 3.8:
    // Symfony floors it to 3 and admits one (its estimate is then 4.8 of
    // 4); tkshm denies until estimate + 1 <= 4, at 12.5 s.
    [$sf, $tk] = both(SW, [[0, 'consume', 4], [10.5, 'consume'], [12.5, 'consume']]);
    $got = static fn (array $rs) => array_map(static fn ($r) => [$r['accepted'], $r['retry']], $rs);
    check_same([[true, 10.0], [true, 20.0], [false, 20.0]], $got($sf), 'symfony');
    check_same([[true, 0.0], [false, 12.5], [true, 12.5]], $got($tk), 'tkshm');
});

/* ---- no_limit ---- */

test('no_limit: Symfony\'s NoLimiter', function () {
    $f = tkshm_factory(['id' => 'free', 'policy' => 'no_limit']);
    check_true($f instanceof Tkshm\Symfony\RateLimiterFactoryInterface, 'the factory interface');
    $l = $f->create('x');
    check_true($l instanceof NoLimiter, get_class($l));
    check_true($l->consume(1000)->isAccepted(), 'accepted');
});

/* ---- reservations never over-admit ---- */

/* Random consumes and reservations at increasing times on one key; every
 * admission counted at the time it acts (a consume now, a reservation at
 * its time to act).  Returns [act time (s after T0), tokens] pairs. */
function random_admissions(array $config, int $seed, int $steps): array
{
    mt_srand($seed);
    $l = tkshm_factory($config)->create('k');
    $acts = [];
    $t = 0.0;
    for ($i = 0; $i < $steps; $i++) {
        $t += mt_rand(0, 400) / 1000;                    // 0 to 0.4 s apart
        SymClock::$now = T0 + $t;
        $n = mt_rand(1, 3);
        if (mt_rand(0, 2) === 0) {
            try {
                $res = $l->reserve($n, mt_rand(0, 1) ? null : mt_rand(0, 5000) / 1000);
                $acts[] = [$res->getTimeToAct() - T0, $n];
            } catch (MaxWaitDurationExceededException $e) {
            }
        } elseif ($l->consume($n)->isAccepted()) {
            $acts[] = [$t, $n];
        }
    }
    return $acts;
}

test('reservations never over-admit: token bucket, counted when they act', function () {
    // 5 tokens, 1 per second: at most 5 + (b - a) act in any [a, b].
    $acts = random_admissions(['id' => 'r', 'policy' => 'token_bucket', 'limit' => 5,
        'rate' => ['interval' => '1 second', 'amount' => 1]], 23, 600);
    usort($acts, static fn ($x, $y) => $x[0] <=> $y[0]);
    $n = count($acts);
    check_true($n > 100, "admissions: $n");
    for ($i = 0; $i < $n; $i++) {
        $sum = 0;
        for ($j = $i; $j < $n; $j++) {
            $sum += $acts[$j][1];
            $bound = 5 + ($acts[$j][0] - $acts[$i][0]) + 1e-6;
            check_true($sum <= $bound, sprintf('%d tokens act in [%.3f, %.3f] s: more than %.3f', $sum, $acts[$i][0], $acts[$j][0], $bound));
        }
    }
});

test('reservations never over-admit: fixed window, counted when they act', function () {
    $acts = random_admissions(['id' => 'r', 'policy' => 'fixed_window', 'limit' => 6,
        'interval' => '5 seconds'], 5, 600);
    $per = [];
    foreach ($acts as [$at, $n]) {
        $w = (int) floor((T0 + $at) / 5);
        $per[$w] = ($per[$w] ?? 0) + $n;
    }
    check_true(count($per) > 20, 'windows: ' . count($per));
    foreach ($per as $w => $sum) {
        check_true($sum <= 6, "window $w: $sum act in it, more than 6");
    }
});

test('reservations from 4 processes at once: every instant booked once', function () {
    // 4 forked processes reserve 500 tokens each, one at a time, on one
    // key (5 tokens, 1 per second), all at the instant T0 (their clock;
    // they start together by the real one): the first 5 act now, the other
    // 1995 one per second after it, each second booked by exactly one of
    // them, whoever won the races.
    $config = ['id' => 'fork', 'policy' => 'token_bucket', 'limit' => 5,
        'rate' => ['interval' => '1 second', 'amount' => 1], 'table' => temp_dir() . '/fork'];
    (new TkshmRateLimiterFactory($config))->create('warm')->reset();   // creates the table
    $files = [];
    $pids = [];
    $start = microtime(true) + 0.2;
    for ($p = 0; $p < 4; $p++) {
        $files[$p] = temp_dir() . "/fork-$p.json";
        $pid = pcntl_fork();
        check_true($pid >= 0, 'fork');
        if ($pid === 0) {
            SymClock::$now = T0;
            $l = (new TkshmRateLimiterFactory($config, static fn (): float => SymClock::$now))->create('k');
            $acts = [];
            while (microtime(true) < $start) {
                usleep(200);
            }
            for ($i = 0; $i < 500; $i++) {
                $acts[] = round($l->reserve(1)->getTimeToAct() - T0, 3);
            }
            file_put_contents($files[$p], json_encode($acts));
            exit(0);
        }
        $pids[] = $pid;
    }
    foreach ($pids as $pid) {
        pcntl_waitpid($pid, $status);
        check_true(pcntl_wifexited($status) && pcntl_wexitstatus($status) === 0, 'a child failed');
    }
    $all = [];
    $owner = [];
    foreach ($files as $p => $f) {
        foreach (json_decode((string) file_get_contents($f), true) as $x) {
            $all[] = $x;
            $owner[(string) $x] = $p;
        }
    }
    sort($all);
    // how often consecutive seconds went to different processes (the
    // races, when they ran at once: printed, not asserted)
    $switches = 0;
    for ($i = 1; $i <= 1995; $i++) {
        $switches += ($owner[(string) (float) $i] ?? $owner[(string) $i] ?? -1) !== ($owner[(string) (float) ($i - 1)] ?? $owner[(string) ($i - 1)] ?? -1) ? 1 : 0;
    }
    fwrite(STDERR, "  (4 processes: consecutive seconds changed hands $switches times)\n");
    check_same(array_merge(array_fill(0, 5, 0), range(1, 1995)), array_map(static fn ($x) => (int) $x, $all), 'times to act');
    foreach ($all as $x) {
        check_true(abs($x - round($x)) < 1e-9, "a time to act of $x s: not a whole second");
    }
});

/* ---- errors: Symfony's exceptions for bad options ---- */

/* What $fn throws: [class, message]. */
function thrown(callable $fn): array
{
    try {
        $fn();
    } catch (\Throwable $e) {
        return [get_class($e), $e->getMessage()];
    }
    return ['nothing thrown', ''];
}

test('bad options: the exceptions and messages Symfony\'s factory gives', function () {
    $bad = [
        'no id' => ['policy' => 'fixed_window', 'limit' => 1, 'interval' => '1 second'],
        'no policy' => ['id' => 'a'],
        'unknown policy' => ['id' => 'a', 'policy' => 'leaky_bucket'],
        'unknown option' => ['id' => 'a', 'policy' => 'fixed_window', 'limit' => 1, 'interval' => '1 second', 'lock_factory' => null],
        'limit as string' => ['id' => 'a', 'policy' => 'fixed_window', 'limit' => '5', 'interval' => '1 second'],
        'interval as int' => ['id' => 'a', 'policy' => 'fixed_window', 'limit' => 5, 'interval' => 60],
        'rate amount as string' => ['id' => 'a', 'policy' => 'token_bucket', 'limit' => 5, 'rate' => ['interval' => '1 second', 'amount' => '2']],
        'rate unknown key' => ['id' => 'a', 'policy' => 'token_bucket', 'limit' => 5, 'rate' => ['interval' => '1 second', 'per' => 2]],
    ];
    foreach ($bad as $what => $config) {
        $want = thrown(static fn () => symfony_factory($config));
        $got = thrown(static fn () => tkshm_factory($config));
        check_true($want[0] !== 'nothing thrown', "$what: Symfony accepts it");
        check_same($want, $got, $what);
    }
});

test('bad values found at create(): the same exceptions as Symfony', function () {
    $bad = [
        'no limit' => ['id' => 'a', 'policy' => 'fixed_window', 'interval' => '1 second'],
        'no interval' => ['id' => 'a', 'policy' => 'sliding_window', 'limit' => 3],
        'no rate' => ['id' => 'a', 'policy' => 'token_bucket', 'limit' => 3],
        'limit 0, fixed' => ['id' => 'a', 'policy' => 'fixed_window', 'limit' => 0, 'interval' => '1 second'],
    ];
    foreach ($bad as $what => $config) {
        // Symfony reads the missing option with a warning, then a TypeError
        $want = thrown(static fn () => @symfony_factory($config)->create('x'));
        $got = thrown(static fn () => @tkshm_factory($config)->create('x'));
        check_true($want[0] !== 'nothing thrown', "$what: Symfony accepts it");
        check_same($want, $got, $what);
    }
});

test('bad calls: Symfony\'s exceptions', function () {
    SymClock::$now = T0;
    foreach ([TB, FW] as $config) {
        $want = thrown(static fn () => symfony_factory($config)->create('x')->consume(4));
        check_same($want, thrown(static fn () => tkshm_factory($config)->create('x')->consume(4)), $config['policy'] . ': consume(4) of 3');
        $want = thrown(static fn () => symfony_factory($config)->create('x')->reserve(4));
        check_same($want, thrown(static fn () => tkshm_factory($config)->create('x')->reserve(4)), $config['policy'] . ': reserve(4) of 3');
    }
    $e = check_throws(ReserveNotSupportedException::class, null, static fn () => tkshm_factory(SW)->create('x')->reserve(1));
    check_same('Reserving tokens is not supported by "' . TkshmLimiter::class . '".', $e->getMessage(), 'message');
    // ensureAccepted(): Symfony's RateLimitExceededException
    $l = tkshm_factory(FW)->create('x');
    $l->consume(3)->ensureAccepted();
    $e = check_throws(RateLimitExceededException::class, null, static fn () => $l->consume()->ensureAccepted());
    check_same([0, 3, 10.0], [$e->getRemainingTokens(), $e->getLimit(), retry_of($e->getRateLimit())], 'the exception');
});

test('the options of its own: table, slots, table_mode; tkshm\'s limits of intervals', function () {
    $c = ['id' => 'a', 'policy' => 'fixed_window', 'limit' => 1, 'interval' => '1 second'];
    foreach (['table' => 5, 'slots' => '64', 'table_mode' => '0600'] as $name => $value) {
        $e = check_throws(\Symfony\Component\OptionsResolver\Exception\InvalidOptionsException::class, null,
            static fn () => new TkshmRateLimiterFactory($c + [$name => $value]), $name);
        check_true(str_contains($e->getMessage(), "\"$name\""), $e->getMessage());
    }
    $f = new TkshmRateLimiterFactory(['id' => 'my id/x'] + $c);
    check_true(str_starts_with($f->tablePath(), 'tkshm-symfony-my_id_x-'), $f->tablePath());
    check_same('fixedWindow:limit=1,windowMs=1000', $f->policy(), 'policy');
    check_same('tokenBucket:capacity=10,refillPerSec=0.5', (new TkshmRateLimiterFactory(
        ['id' => 'a', 'policy' => 'token_bucket', 'limit' => 10, 'rate' => ['interval' => '1 minute', 'amount' => 30]]))->policy(), 'policy');
    check_same('slidingWindow:limit=100,windowMs=3600000,buckets=1', (new TkshmRateLimiterFactory(
        ['id' => 'a', 'policy' => 'sliding_window', 'limit' => 100, 'interval' => '1 hour']))->policy(), 'policy');
    // Symfony counts intervals in whole seconds: "500 msec" is 0
    foreach (['fixed_window', 'sliding_window'] as $p) {
        check_throws(\Symfony\Component\RateLimiter\Exception\InvalidIntervalException::class, null,
            static fn () => tkshm_factory(['id' => 'a', 'policy' => $p, 'limit' => 1, 'interval' => '500 msec'])->create('x'), $p);
    }
    // a sliding window of limit 0 is accepted by Symfony and denies all
    SymClock::$now = T0;
    [$sf, $tk] = both(['id' => 'z', 'policy' => 'sliding_window', 'limit' => 0, 'interval' => '10 seconds'], [[0, 'consume'], [1, 'consume']]);
    compare($sf, $tk, 10.0);
});

test('one Tkshm\\Table per table and process; keys of any length', function () {
    $c = ['id' => 'reuse', 'policy' => 'token_bucket', 'limit' => 2, 'rate' => ['interval' => '1 hour'],
        'table' => temp_dir() . '/reuse'];
    $opens = Tkshm\Table::openCount();
    for ($i = 0; $i < 50; $i++) {
        $f = new TkshmRateLimiterFactory($c);
        $f->create("k$i")->consume();
    }
    check_same($opens + 1, Tkshm\Table::openCount(), 'opened once');
    $long = str_repeat('x', 5000);
    $l = $f->create($long);
    check_same([true, true, false], [$l->consume()->isAccepted(), $l->consume()->isAccepted(), $l->consume()->isAccepted()], 'a 5000-byte key');
    check_true($f->create($long . 'y')->consume()->isAccepted(), 'another long key is another key');
    check_true($f->create('')->consume()->isAccepted(), 'the empty key (id "reuse-")');
});

test('the system clock when no clock is given', function () {
    $f = new TkshmRateLimiterFactory(['id' => 'wall', 'policy' => 'token_bucket', 'limit' => 2,
        'rate' => ['interval' => '1 hour'], 'table' => temp_dir() . '/wall']);
    $l = $f->create('k');
    $t = microtime(true);
    check_true($l->consume(2)->isAccepted(), 'the burst');
    $r = $l->consume();
    check_true(!$r->isAccepted(), 'empty');
    $retry = (float) $r->getRetryAfter()->format('U.u');
    check_true(abs($retry - ($t + 3600)) < 5, "retry in an hour: $retry vs $t");
    $res = $l->reserve(1);
    // (getWaitDuration() would read symfony_clock.php's clock)
    check_true(abs($res->getTimeToAct() - microtime(true) - 3600) < 5, 'the reservation acts in an hour: ' . $res->getTimeToAct());
    check_throws(MaxWaitDurationExceededException::class, null, static fn () => $l->reserve(1, 60.0));
});

run();
