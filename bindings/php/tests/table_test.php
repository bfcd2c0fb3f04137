<?php
/*
 * Tkshm\Table: one handle per table and process however many times it is
 * constructed, the library's errors as Tkshm\Exception with their codes,
 * bad input refused with nothing changed, peek/reset/stats/policy, and a
 * handle inherited over fork shared exactly with the parent.
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
    $e = check_throws(Tkshm\Exception::class, Tkshm\EMISMATCH, fn() => new Tkshm\Table($path, 'gcra:limit=20,periodMs=1000', 64), 'other policy, same file');
    check_true($e->getMessage() !== '', 'a sentence');
    check_throws(Tkshm\Exception::class, Tkshm\EMISMATCH, fn() => new Tkshm\Table($path, GCRA, 1024), 'other size, same file');
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

run();
