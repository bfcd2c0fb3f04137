<?php
/*
 * Tkshm\Table: one handle per table and process however many times it is
 * constructed, the library's errors as Tkshm\Exception with their codes,
 * bad input refused with nothing changed, peek/reset/stats/policy, and a
 * handle inherited over fork shared exactly with the parent.  Issue 19: a
 * construction with another policy or more slots applies them to the live
 * table (in place, or by a replacement carrying the keys), reported by
 * change(); plan() and apply(); keep: the old EMISMATCH.
 */

declare(strict_types=1);

require __DIR__ . '/harness.php';

const GCRA = 'gcra:limit=10,periodMs=1000,burst=5';
/* Checks of one key by each of two processes at once. */
const CHECKS = 20000;

/* What a bad call must leave as it was: the counters and the key's state. */
function snapshot(Tkshm\Table $t, string $key, float $now): array
{
    $s = $t->stats();
    return [
        'allowed' => $s['allowed'], 'denied' => $s['denied'],
        'inserts' => $s['inserts'], 'resets' => $s['resets'],
        'peek' => fields($t->peek($key, $now)),
    ];
}

test('constructed again in the same process: the same handle', function () {
    $path = temp_dir() . '/reuse';
    $before = Tkshm\Table::openCount();
    $a = new Tkshm\Table($path, GCRA, 64);
    check_same($before + 1, Tkshm\Table::openCount(), 'first construction opens');
    for ($i = 0; $i < 100; $i++) {
        $b = new Tkshm\Table($path, GCRA, 64);
    }
    // the same policy written otherwise (option order, default spelled out)
    $c = new Tkshm\Table($path, 'gcra:burst=5,periodMs=1000,limit=10', 64);
    check_same($before + 1, Tkshm\Table::openCount(), 'later constructions reuse it');
    check_same(getmypid(), $a->stats()['handle_pid'], 'opened by this process');
    // one state: what $a consumes, $b and $c see
    check_true($a->check('k', 5, 1000.0)->allowed, 'a admits 5');
    check_true(!$b->check('k', 1, 1000.0)->allowed, 'b sees it');
    check_same(0, $c->peek('k', 1000.0)->remaining, 'c sees it');
    // other slots: another handle (slots 64 and 0 are different requests)
    $d = new Tkshm\Table(temp_dir() . '/reuse-0', GCRA);
    check_same($before + 2, Tkshm\Table::openCount(), 'another table opens');
    check_same(65536, $d->stats()['slots'], 'default slots');
});

test('a rate string is a GCRA policy, reported canonically', function () {
    $t = new Tkshm\Table(temp_dir() . '/rate', '5 per minute', 64);
    check_same('gcra:limit=5,periodMs=60000,burst=5', $t->policy());
    for ($i = 0; $i < 5; $i++) {
        check_true($t->check('k', 1, 1000.0)->allowed, "admission $i");
    }
    check_true(!$t->check('k', 1, 1000.0)->allowed, 'the sixth is denied');
    $u = new Tkshm\Table(temp_dir() . '/rate-burst', '10/second,burst=20', 64);
    check_same('gcra:limit=10,periodMs=1000,burst=20', $u->policy());
    check_throws(Tkshm\Exception::class, Tkshm\EPOLICY,
        fn() => new Tkshm\Table(temp_dir() . '/rate-bad', '10/fortnight', 64));
});

test('a failed open is not remembered: the next construction tries again', function () {
    $path = temp_dir() . '/retry';
    check_throws(Tkshm\Exception::class, Tkshm\EPOLICY, fn() => new Tkshm\Table($path, 'gcra:limit=0,periodMs=1000'));
    check_true(!file_exists($path), 'nothing created');
    $t = new Tkshm\Table($path, GCRA, 64);
    check_same(GCRA, $t->policy());
});

test('library errors are Tkshm\Exception with the code and the sentence', function () {
    $path = temp_dir() . '/errors';
    new Tkshm\Table($path, GCRA, 64);
    $e = check_throws(Tkshm\Exception::class, Tkshm\EPOLICY, fn() => new Tkshm\Table($path, 'gcra:limit=10'), 'missing option');
    check_true($e instanceof RuntimeException, 'a RuntimeException');
    check_true(str_contains($e->getMessage(), 'periodMs'), 'names the option: ' . $e->getMessage());
    check_throws(Tkshm\Exception::class, Tkshm\EPOLICY, fn() => new Tkshm\Table($path, 'nosuch:limit=1'), 'unknown kind');
    check_throws(Tkshm\Exception::class, Tkshm\EPOLICY, fn() => new Tkshm\Table($path, "gcra:limit=10,periodMs=1000\0x"), 'NUL in policy');
    check_same(GCRA, (new Tkshm\Table($path, GCRA, 64))->policy(), 'the failed constructions changed nothing');
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => new Tkshm\Table('', GCRA), 'empty path');
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => new Tkshm\Table($path, GCRA, -1), 'negative slots');
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => new Tkshm\Table($path, GCRA, 64, 010000), 'mode beyond 07777');
    // Issue 18: a setuid, setgid or sticky bit (0xffffffff masked to
    // 07777) made such a file; now refused, naming the bits, creating nothing.
    foreach ([04600, 02660, 01600, 07777, 0xffffffff] as $m) {
        $p = temp_dir() . sprintf('/mode-%o', $m);
        $e = check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => new Tkshm\Table($p, GCRA, 64, $m), sprintf('mode 0%o', $m));
        check_true(str_contains($e->getMessage(), sprintf('mode 0%o has bits outside 0777', $m)), 'names the mode: ' . $e->getMessage());
        check_true(!file_exists($p), sprintf('mode 0%o creates nothing', $m));
    }
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => new Tkshm\Table(temp_dir() . '/mode-neg', GCRA, 64, -1), 'negative mode');
    check_throws(Tkshm\Exception::class, Tkshm\ENOENT, fn() => new Tkshm\Table(temp_dir() . '/no/such/dir/t', GCRA, 64), 'no directory');
    check_throws(ValueError::class, null, fn() => new Tkshm\Table("$path\0x", GCRA, 64), 'NUL in path');
    symlink($path, temp_dir() . '/link');
    check_throws(Tkshm\Exception::class, Tkshm\ESYMLINK, fn() => new Tkshm\Table(temp_dir() . '/link', GCRA, 64), 'symlink');
    $t = new Tkshm\Table($path, GCRA, 64);
    check_throws(Error::class, null, fn() => $t->__construct($path, GCRA, 64), 'constructed twice');
    check_throws(Error::class, null, fn() => clone $t, 'clone');
    check_throws(Exception::class, null, fn() => serialize($t), 'serialize');
});

test('bad input throws its code and changes nothing', function () {
    $t = new Tkshm\Table(temp_dir() . '/bad', GCRA, 64);
    $t->check('k', 2, 1000.0);
    $before = snapshot($t, 'k', 1000.0);
    $cases = [
        'empty key' => [Tkshm\EKEYEMPTY, fn() => $t->check('', 1, 1000.0)],
        'key of 1025 bytes' => [Tkshm\EKEYLONG, fn() => $t->check(str_repeat('k', 1025), 1, 1000.0)],
        'cost 0' => [Tkshm\ECOST, fn() => $t->check('k', 0, 1000.0)],
        'cost -1' => [Tkshm\ECOST, fn() => $t->check('k', -1, 1000.0)],
        'cost NAN' => [Tkshm\ECOST, fn() => $t->check('k', NAN, 1000.0)],
        'cost INF' => [Tkshm\ECOST, fn() => $t->check('k', INF, 1000.0)],
        'cost 2^53' => [Tkshm\ECOST, fn() => $t->check('k', 9007199254740992, 1000.0)],
        'now NAN' => [Tkshm\ENOW, fn() => $t->check('k', 1, NAN)],
        'now -1' => [Tkshm\ENOW, fn() => $t->check('k', 1, -1.0)],
        'now INF' => [Tkshm\ENOW, fn() => $t->check('k', 1, INF)],
        'peek empty key' => [Tkshm\EKEYEMPTY, fn() => $t->peek('', 1000.0)],
        'peek now NAN' => [Tkshm\ENOW, fn() => $t->peek('k', NAN)],
        'reset empty key' => [Tkshm\EKEYEMPTY, fn() => $t->reset('')],
        'reset long key' => [Tkshm\EKEYLONG, fn() => $t->reset(str_repeat('k', 1025))],
    ];
    foreach ($cases as $what => [$code, $fn]) {
        check_throws(Tkshm\Exception::class, $code, $fn, $what);
        check_same($before, snapshot($t, 'k', 1000.0), "after $what");
    }
    // wrong types are PHP's TypeError (strict_types), also before anything
    check_throws(TypeError::class, null, fn() => $t->check('k', '1', 1000.0), 'cost as a string');
    check_throws(TypeError::class, null, fn() => $t->check(['k']), 'key as an array');
    check_throws(ArgumentCountError::class, null, fn() => $t->check(), 'no key');
    check_same($before, snapshot($t, 'k', 1000.0), 'after the type errors');
});

test('keys are bytes; costs may be fractional; peek consumes nothing', function () {
    $t = new Tkshm\Table(temp_dir() . '/keys', GCRA, 64);
    check_same(4, $t->check("a\0b", 1, 1000.0)->remaining, 'a NUL b');
    check_same(4, $t->check("a\0c", 1, 1000.0)->remaining, 'a NUL c is another key');
    check_same(4, $t->check(str_repeat('x', 1024), 1, 1000.0)->remaining, '1024 bytes');
    $d = $t->check('f', 0.5, 1000.0);   // half a unit: TAT 1050
    check_same(['allowed' => true, 'limit' => 5, 'remaining' => 4, 'resetAt' => 1050, 'retryAfterMs' => 0], fields($d));
    for ($i = 0; $i < 10; $i++) {
        $p = $t->peek('f', 1000.0);
    }
    check_same(fields($t->check('f', 0.5, 1000.0)), ['allowed' => true, 'limit' => 5, 'remaining' => 4, 'resetAt' => 1100, 'retryAfterMs' => 0], 'peeks consumed nothing');
    check_same(true, $p->allowed, 'peek: allowed');
});

test('reset forgets a key', function () {
    $t = new Tkshm\Table(temp_dir() . '/reset', GCRA, 64);
    for ($i = 0; $i < 6; $i++) {
        $d = $t->check('r', 1, 1000.0);
    }
    check_true(!$d->allowed, 'exhausted');
    $resets = $t->stats()['resets'];
    $t->reset('r');
    $t->reset('never-seen');
    check_same($resets + 2, $t->stats()['resets'], 'counted');
    check_same(4, $t->check('r', 1, 1000.0)->remaining, 'starts fresh');
});

test('stats and policy', function () {
    $t = new Tkshm\Table(temp_dir() . '/stats', 'slidingWindow:windowMs=1000,limit=10', 100);
    check_same('slidingWindow:limit=10,windowMs=1000,buckets=10', $t->policy(), 'canonical, defaults written out');
    $t->check('a', 1, 1000.0);
    for ($i = 0; $i < 12; $i++) {
        $t->check('b', 1, 1000.0);
    }
    $s = $t->stats();
    check_same(11, $s['allowed'], 'allowed');
    check_same(2, $s['denied'], 'denied');
    check_same(2, $s['inserts'], 'inserts');
    check_same(128, $s['slots'], 'slots rounded up to a power of two');
    check_same('evict', $s['on_full']);
    check_same(false, $s['anonymous']);
    check_same($t->policy(), $s['policy']);
    check_same(filesize(temp_dir() . '/stats'), $s['file_bytes'], 'file size');
    $expected = ['allowed', 'denied', 'inserts', 'reclaims', 'evictions', 'evictions_in_debt',
        'debt_restores', 'cas_retries', 'refusals', 'duplicates_killed', 'resets', 'multi_rollbacks',
        'claims_stolen', 'releases', 'reaped', 'slots', 'buckets', 'debt_cells', 'file_bytes',
        'bytes_per_key', 'created_ms', 'layout_version', 'on_full', 'anonymous', 'policy', 'handle_pid'];
    check_same($expected, array_keys($s), 'keys');
});

test('a name without a slash is a file in /dev/shm', function () {
    $name = 'tkshm-php-test-' . getmypid() . '-' . bin2hex(random_bytes(4));
    try {
        $t = new Tkshm\Table($name, GCRA, 64, 0640);
        check_true(is_file("/dev/shm/$name"), 'created in /dev/shm');
        check_same(0640, fileperms("/dev/shm/$name") & 07777, 'mode');
        check_same(4, $t->check('k', 1, 1000.0)->remaining);
    } finally {
        @unlink("/dev/shm/$name");
    }
});

test('a forked child reuses the inherited handle; admission stays exact', function () {
    // 100 at once, then one per 36 s: two processes checking one key at one
    // instant must admit exactly 100 between them.
    $policy = 'gcra:limit=100,periodMs=3600000';
    $path = temp_dir() . '/fork';
    $t = new Tkshm\Table($path, $policy, 64);
    $parentOpens = Tkshm\Table::openCount();
    $countFile = temp_dir() . '/fork-child-count';
    $parentPid = getmypid();
    $pid = pcntl_fork();
    check_true($pid >= 0, 'fork');
    if ($pid === 0) {
        // The child: exit status 0 only if every expectation held.
        $ok = true;
        $c = new Tkshm\Table($path, $policy, 64);
        $ok = $ok && Tkshm\Table::openCount() === 0;           // reused, not opened
        $ok = $ok && $c->stats()['handle_pid'] === $parentPid;
        $n = 0;
        for ($i = 0; $i < CHECKS; $i++) {
            $n += $c->check('hot', 1, 1000.0)->allowed ? 1 : 0;
        }
        file_put_contents($countFile, (string)$n);
        new Tkshm\Table(temp_dir() . '/fork-own', $policy, 64);
        $ok = $ok && Tkshm\Table::openCount() === 1;           // its own open
        exit($ok ? 0 : 3);
    }
    $n = 0;
    for ($i = 0; $i < CHECKS; $i++) {
        $n += $t->check('hot', 1, 1000.0)->allowed ? 1 : 0;
    }
    pcntl_waitpid($pid, $status);
    check_true(pcntl_wifexited($status), 'child exited');
    check_same(0, pcntl_wexitstatus($status), 'child expectations (openCount 0, parent handle, own open 1)');
    check_same(100, $n + (int)file_get_contents($countFile), 'admitted by parent + child');
    $s = $t->stats();
    check_same(100, $s['allowed'], 'table: allowed');
    check_same(2 * CHECKS - 100, $s['denied'], 'table: denied');
    check_same($parentOpens, Tkshm\Table::openCount(), 'the parent opened nothing more');
});

/* Issue 19: a table's lifecycle.  Times are injected: NOW is in the
 * fixedWindow window [10^12, 2*10^12) ms, so FOREVER windows never end. */
const DAY = 86400000;
const FOREVER = 1000000000000;
const NOW = 1700000000000.0;

/* Admissions of $n checks of $key at $now. */
function admitted(Tkshm\Table $t, string $key, int $n, float $now = NOW): int
{
    $a = 0;
    for ($i = 0; $i < $n; $i++) {
        $a += $t->check($key, 1, $now)->allowed ? 1 : 0;
    }
    return $a;
}

/* change()'s array, spelled out. */
function change(string $kind, bool $kept, int $before, int $after, string $text): array
{
    return ['kind' => $kind, 'states_kept' => $kept, 'slots_before' => $before,
        'slots_after' => $after, 'text' => $text];
}

test('change(): create, then none for a reused handle', function () {
    $path = temp_dir() . '/life-none';
    $t = new Tkshm\Table($path, GCRA, 64);
    check_same(change('create', false, 0, 64, 'created: ' . GCRA . ', 64 slots'), $t->change());
    $u = new Tkshm\Table($path, 'gcra:burst=5,periodMs=1000,limit=10', 0);
    check_same(change('none', true, 64, 64, 'unchanged'), $u->change(), 'same policy, slots 0');
    check_same(change('create', false, 0, 64, 'created: ' . GCRA . ', 64 slots'), $t->change(), 'each Table keeps its own');
});

test('another policy for the same path is applied in place, states kept', function () {
    $path = temp_dir() . '/life-inplace';
    $opens = Tkshm\Table::openCount();
    $t = new Tkshm\Table($path, 'fixedWindow:limit=10,windowMs=' . FOREVER, 64);
    check_same(10, admitted($t, 'k', 15), 'limit 10');
    // the edited script, in the same process: no exception, no new open
    $u = new Tkshm\Table($path, 'fixedWindow:limit=20,windowMs=' . FOREVER, 64);
    check_same(change('in_place', true, 64, 64, 'limit 10 -> 20, states kept'), $u->change());
    check_same($opens + 1, Tkshm\Table::openCount(), 'the handle is reused');
    check_same('fixedWindow:limit=20,windowMs=' . FOREVER, $t->policy(), 'the old object sees it');
    check_same($t->stats()['policy'], $u->policy(), 'stats() too');
    // the 10 spent count against the new 20: exactly 10 more
    check_same(10, admitted($t, 'k', 15), 'limit 20, 10 kept');
    check_same(20, admitted($u, 'fresh', 25), 'a fresh key gets the new limit');
    // undoing the edit undoes it in the table
    $v = new Tkshm\Table($path, 'fixedWindow:limit=10,windowMs=' . FOREVER, 64);
    check_same(change('in_place', true, 64, 64, 'limit 20 -> 10, states kept'), $v->change());
    check_same(0, admitted($v, 'k', 5), 'back to 10: k is over it');
});

test('gcra in place keeps the theoretical arrival time, not a count', function () {
    // 10 per day spent at once is a day of debt; 20 per day (burst 20)
    // holds a day of debt: nothing more now, one more per 72 minutes.
    // Raising the burst at the same rate makes room for exactly 10 more.
    $path = temp_dir() . '/life-gcra';
    $t = new Tkshm\Table($path, 'gcra:limit=10,periodMs=' . DAY, 64);
    check_same(10, admitted($t, 'k', 15), '10 per day');
    $u = new Tkshm\Table($path, 'gcra:limit=20,periodMs=' . DAY, 64);
    check_same('in_place', $u->change()['kind']);
    check_same('limit 10 -> 20, burst 10 -> 20, states kept', $u->change()['text']);
    check_same(0, admitted($u, 'k', 5), '20 per day, at once');
    check_same(1, admitted($u, 'k', 5, NOW + DAY / 20), '72 minutes later');
    $g = new Tkshm\Table(temp_dir() . '/life-burst', 'gcra:limit=10,periodMs=' . DAY, 64);
    check_same(10, admitted($g, 'k', 15), 'burst 10');
    $h = new Tkshm\Table(temp_dir() . '/life-burst', 'gcra:limit=10,periodMs=' . DAY . ',burst=20', 64);
    check_same(change('in_place', true, 64, 64, 'burst 10 -> 20, states kept'), $h->change());
    check_same(10, admitted($h, 'k', 15), 'burst 20: exactly 10 more');
});

test('more slots replace the table, keys carried over; fewer keep its size', function () {
    $path = temp_dir() . '/life-grow';
    $t = new Tkshm\Table($path, GCRA, 64);
    check_same(5, admitted($t, 'k', 8, 1000.0), 'burst 5');
    $u = new Tkshm\Table($path, GCRA, 1000);
    check_same(change('replace', true, 64, 1024, 'slots 64 -> 1024: replaced, states carried over'), $u->change());
    check_same(1024, $t->stats()['slots'], 'the old object follows');
    check_same(filesize($path), $t->stats()['file_bytes'], 'the path names the new table');
    check_same(0, admitted($t, 'k', 3, 1000.0), 'k still spent');
    $v = new Tkshm\Table($path, GCRA, 64);
    check_same(change('none', true, 1024, 1024, 'slots 1024 kept (64 asked: a table does not shrink)'), $v->change());
    check_same(1024, $v->stats()['slots']);
});

test('another kind replaces the table as the library says', function () {
    $path = temp_dir() . '/life-kind';
    $t = new Tkshm\Table($path, 'gcra:limit=20,periodMs=' . DAY, 64);
    check_same(20, admitted($t, 'k', 25), 'gcra 20');
    $u = new Tkshm\Table($path, 'slidingWindow:limit=30,windowMs=' . DAY, 64);
    $c = $u->change();
    check_same('replace', $c['kind'], $c['text']);
    check_true(str_starts_with($c['text'], 'kind gcra -> slidingWindow'), $c['text']);
    check_same('slidingWindow:limit=30,windowMs=' . DAY . ',buckets=10', $t->policy());
    // converted, the 20 spent count against the 30; else keys start afresh
    check_same($c['states_kept'] ? 10 : 30, admitted($t, 'k', 40), $c['text']);
});

test('keep: another policy or size is EMISMATCH and changes nothing', function () {
    $path = temp_dir() . '/life-keep';
    // created by another process, so that this one's first construction
    // is an open (tkshm_open with TKSHM_O_KEEP), not a reuse
    $pid = pcntl_fork();
    check_true($pid >= 0, 'fork');
    if ($pid === 0) {
        new Tkshm\Table($path, GCRA, 64);
        exit(0);
    }
    pcntl_waitpid($pid, $status);
    check_same(0, pcntl_wexitstatus($status), 'the child created it');
    $e = check_throws(Tkshm\Exception::class, Tkshm\EMISMATCH, fn() => new Tkshm\Table($path, 'gcra:limit=20,periodMs=1000', 64, keep: true), 'open, other policy');
    check_true(str_contains($e->getMessage(), 'limit 10 -> 20'), 'names the difference: ' . $e->getMessage());
    check_throws(Tkshm\Exception::class, Tkshm\EMISMATCH, fn() => new Tkshm\Table($path, GCRA, 1024, keep: true), 'open, other size');
    check_throws(Tkshm\Exception::class, Tkshm\EMISMATCH, fn() => new Tkshm\Table($path, GCRA, 8, keep: true), 'open, fewer slots');
    $t = new Tkshm\Table($path, GCRA, 64, keep: true);
    check_same(change('none', true, 64, 64, 'unchanged'), $t->change(), 'the same: attached');
    // a reused handle, the same rule
    $e = check_throws(Tkshm\Exception::class, Tkshm\EMISMATCH, fn() => new Tkshm\Table($path, 'gcra:limit=20,periodMs=1000', 64, keep: true), 'reuse, other policy');
    check_true(str_contains($e->getMessage(), 'limit 10 -> 20') && str_contains($e->getMessage(), 'keep'), 'names the difference: ' . $e->getMessage());
    check_throws(Tkshm\Exception::class, Tkshm\EMISMATCH, fn() => new Tkshm\Table($path, GCRA, 1024, keep: true), 'reuse, more slots');
    check_throws(Tkshm\Exception::class, Tkshm\EMISMATCH, fn() => new Tkshm\Table($path, GCRA, 8, keep: true), 'reuse, fewer slots');
    check_same(change('none', true, 64, 64, 'unchanged'), (new Tkshm\Table($path, GCRA, 0, keep: true))->change(), 'slots 0: the table\'s');
    check_same(GCRA, $t->policy(), 'policy unchanged');
    check_same(64, $t->stats()['slots'], 'size unchanged');
});

test('plan() says what a construction would do and changes nothing', function () {
    $path = temp_dir() . '/life-plan';
    check_same(change('create', false, 0, 64, 'created: ' . GCRA . ', 64 slots'), Tkshm\Table::plan($path, GCRA, 64), 'no table');
    check_true(!file_exists($path), 'nothing created');
    $t = new Tkshm\Table($path, GCRA, 64);
    check_same(change('none', true, 64, 64, 'unchanged'), Tkshm\Table::plan($path, GCRA));
    check_same(change('in_place', true, 64, 64, 'limit 10 -> 20, states kept'), Tkshm\Table::plan($path, 'gcra:limit=20,periodMs=1000,burst=5'));
    check_same(change('replace', true, 64, 128, 'slots 64 -> 128: replaced, states carried over'), Tkshm\Table::plan($path, GCRA, 100));
    check_same('replace', Tkshm\Table::plan($path, 'tokenBucket:capacity=5,refillPerSec=10')['kind']);
    check_same(GCRA, $t->policy(), 'policy unchanged');
    check_same(64, $t->stats()['slots'], 'size unchanged');
    $e = check_throws(Tkshm\Exception::class, Tkshm\EPOLICY, fn() => Tkshm\Table::plan($path, 'gcra:limit=10'), 'invalid policy');
    check_true(str_contains($e->getMessage(), 'periodMs'), 'names the option: ' . $e->getMessage());
    file_put_contents(temp_dir() . '/life-plan-junk', str_repeat('x', 4096));
    check_throws(Tkshm\Exception::class, Tkshm\EBADMAGIC, fn() => Tkshm\Table::plan(temp_dir() . '/life-plan-junk', GCRA), 'not a table');
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => Tkshm\Table::plan($path, GCRA, -1), 'negative slots');
});

test('apply() changes the live table; change() reports it', function () {
    $path = temp_dir() . '/life-apply';
    $t = new Tkshm\Table($path, GCRA, 64);
    check_same(5, admitted($t, 'k', 8, 1000.0));
    $c = $t->apply('gcra:limit=10,periodMs=1000,burst=8');
    check_same(change('in_place', true, 64, 64, 'burst 5 -> 8, states kept'), $c);
    check_same($c, $t->change(), 'change() is the last apply()');
    check_same(3, admitted($t, 'k', 8, 1000.0), 'burst 8: 3 more');
    check_same(change('replace', true, 64, 256, 'slots 64 -> 256: replaced, states carried over'), $t->apply(null, 256), 'grow only');
    check_same('gcra:limit=10,periodMs=1000,burst=8', $t->policy());
    check_same(0, admitted($t, 'k', 3, 1000.0), 'k carried over');
    check_same(change('none', true, 256, 256, 'unchanged'), $t->apply(null), 'nothing asked');
    $before = $t->change();
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => $t->apply(null, 64), 'a table does not shrink');
    check_throws(Tkshm\Exception::class, Tkshm\EPOLICY, fn() => $t->apply('gcra:limit=-1,periodMs=1000'), 'invalid policy');
    check_throws(Tkshm\Exception::class, Tkshm\EPOLICY, fn() => $t->apply("gcra:limit=1,periodMs=1000\0"), 'NUL in policy');
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => $t->apply(null, -1), 'negative slots');
    check_same($before, $t->change(), 'a failed apply() reports nothing');
    check_same('gcra:limit=10,periodMs=1000,burst=8', $t->policy(), 'nor changes anything');
    check_same(256, $t->stats()['slots']);
    // a construction that asks for the policy the script always asked for
    // puts it back: what the script says wins over an earlier apply()
    $u = new Tkshm\Table($path, GCRA, 64);
    check_same(change('in_place', true, 256, 256, 'burst 8 -> 5, states kept, slots 256 kept (64 asked: a table does not shrink)'), $u->change());
});

test('a change made by another process is followed', function () {
    $path = temp_dir() . '/life-other';
    $t = new Tkshm\Table($path, 'fixedWindow:limit=10,windowMs=' . FOREVER, 64);
    check_same(4, admitted($t, 'k', 4));
    $report = temp_dir() . '/life-other-change';
    $pid = pcntl_fork();
    check_true($pid >= 0, 'fork');
    if ($pid === 0) {
        // another worker runs the edited script: a new policy and more
        // slots, a replacement
        $c = new Tkshm\Table($path, 'fixedWindow:limit=20,windowMs=' . FOREVER, 512);
        file_put_contents($report, json_encode($c->change()));
        exit(0);
    }
    pcntl_waitpid($pid, $status);
    check_same(0, pcntl_wexitstatus($status), 'the child applied');
    check_same(change('replace', true, 64, 512, 'limit 10 -> 20, slots 64 -> 512: replaced, states carried over'),
        json_decode(file_get_contents($report), true), "the child's change()");
    // this process's handle follows on its next call
    check_same('fixedWindow:limit=20,windowMs=' . FOREVER, $t->policy());
    check_same(512, $t->stats()['slots']);
    check_same(16, admitted($t, 'k', 20), 'the 4 spent carried over, 16 more');
    // this process constructing with the old script's policy would undo
    // it; with the new one it changes nothing
    $u = new Tkshm\Table($path, 'fixedWindow:limit=20,windowMs=' . FOREVER, 512);
    check_same(change('none', true, 512, 512, 'unchanged'), $u->change());
});

run();
