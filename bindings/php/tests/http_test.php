<?php
/*
 * Tkshm\headers() and Tkshm\client_key(): the values tkshm_http.h specifies
 * (reset seconds max(0, ceil((resetAt - now) / 1000)), Retry-After
 * max(1, ceil(retryAfterMs / 1000)) on a denial only, the draft's quoted
 * policy name), the three styles, and bad input refused.
 */

declare(strict_types=1);

require __DIR__ . '/harness.php';

/* A decision of a fresh key after $n checks of cost 1 at $now. */
function decision_after(string $policy, int $n, float $now): Tkshm\Decision
{
    static $i = 0;
    $t = new Tkshm\Table(temp_dir() . '/http-' . md5($policy), $policy, 64);
    $key = 'k' . ++$i;
    for ($j = 1; $j < $n; $j++) {
        $t->check($key, 1, $now);
    }
    return $t->check($key, 1, $now);
}

const POLICY = 'fixedWindow:limit=3,windowMs=60000';

test('draft style: RateLimit-Policy and RateLimit; Retry-After only on a denial', function () {
    $now = 120000.0 + 15250.5;          // 44749.5 ms before the window ends
    $ok = decision_after(POLICY, 1, $now);
    check_same([
        'RateLimit-Policy' => '"default";q=3',
        'RateLimit' => '"default";r=2;t=45',
    ], Tkshm\headers($ok, null, 'draft', $now));
    $denied = decision_after(POLICY, 4, $now);
    check_true(!$denied->allowed, 'denied');
    check_same(44750, $denied->retryAfterMs, 'retry after');
    check_same([
        'RateLimit-Policy' => '"api";q=3',
        'RateLimit' => '"api";r=0;t=45',
        'Retry-After' => '45',
    ], Tkshm\headers($denied, 'api', 'draft', $now));
    check_same(Tkshm\headers($denied, null, 'draft', $now), Tkshm\headers($denied, nowMs: $now), 'draft is the default');
});

test('legacy and none styles', function () {
    $now = 59999.0;                    // 1 ms before the window ends
    $denied = decision_after(POLICY, 4, $now);
    check_same([
        'RateLimit-Limit' => '3',
        'RateLimit-Remaining' => '0',
        'RateLimit-Reset' => '1',
        'Retry-After' => '1',
    ], Tkshm\headers($denied, null, 'legacy', $now));
    check_same(['Retry-After' => '1'], Tkshm\headers($denied, null, 'none', $now));
    check_same([], Tkshm\headers(decision_after(POLICY, 1, $now), null, 'none', $now));
});

test('reset seconds are never negative; Retry-After at least 1', function () {
    $d = decision_after('gcra:limit=1000,periodMs=1000', 1, 5000.0);   // resetAt 5001
    check_same('"default";r=999;t=0', Tkshm\headers($d, null, 'draft', 9000.0)['RateLimit'], 'a reset in the past');
    $g = decision_after('gcra:limit=1000,periodMs=1000,burst=1', 2, 5000.0);
    check_same(1, $g->retryAfterMs, 'a 1 ms retry-after');
    check_same('1', Tkshm\headers($g, null, 'legacy', 5000.0)['Retry-After']);
});

test('the clock defaults to now', function () {
    $t = new Tkshm\Table(temp_dir() . '/http-now', 'gcra:limit=1,periodMs=10000', 64);
    $before = microtime(true) * 1000;
    $d = $t->check('k');
    $reset = (int)Tkshm\headers($d, null, 'legacy')['RateLimit-Reset'];
    $after = microtime(true) * 1000;
    // resetAt is the check's clock + 10 s, rounded up to a whole ms
    check_true($d->resetAt >= $before + 10000 && $d->resetAt <= ceil($after) + 10000, 'resetAt from the same clock');
    $lo = (int)ceil(($d->resetAt - $after) / 1000);
    $hi = (int)ceil(($d->resetAt - $before) / 1000);
    check_true($reset >= $lo && $reset <= $hi, "reset $reset s, within $lo..$hi");
});

test('the draft quotes and escapes the policy name; bad names and styles are refused', function () {
    $d = decision_after(POLICY, 1, 1000.0);
    check_same('"a\\"b\\\\c";q=3', Tkshm\headers($d, 'a"b\\c', 'draft', 1000.0)['RateLimit-Policy']);
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => Tkshm\headers($d, "x\r\nSet-Cookie: a=b", 'draft', 1000.0), 'CR LF');
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => Tkshm\headers($d, "x\0y", 'draft', 1000.0), 'NUL');
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => Tkshm\headers($d, "caf\xc3\xa9", 'draft', 1000.0), 'non-ASCII');
    check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => Tkshm\headers($d, null, 'ietf', 1000.0), 'unknown style');
    check_throws(Tkshm\Exception::class, Tkshm\ENOW, fn() => Tkshm\headers($d, null, 'draft', NAN), 'now NaN');
    check_throws(TypeError::class, null, fn() => Tkshm\headers(new stdClass()), 'not a decision');
    // a long name: the buffer is sized for it
    $long = str_repeat('n', 5000);
    check_same("\"$long\";q=3", Tkshm\headers($d, $long, 'draft', 1000.0)['RateLimit-Policy']);
});

test('client_key: IPv4, mapped IPv4, IPv6 networks', function () {
    check_same('192.0.2.7', Tkshm\client_key('192.0.2.7'));
    check_same('192.0.2.7', Tkshm\client_key('::ffff:192.0.2.7'), 'v4-mapped');
    check_same('2001:db8::/64', Tkshm\client_key('2001:db8::1'));
    check_same('2001:db8::/64', Tkshm\client_key('2001:0db8:0000:0000:ffff:ffff:ffff:ffff'), 'same /64');
    check_same('2001:db8:0:1::/64', Tkshm\client_key('2001:db8:0:1::1'), 'another /64');
    check_same('2001:db8::/48', Tkshm\client_key('2001:db8:0:1::1', 48));
    check_same('2001:db8:0:1::1/128', Tkshm\client_key('2001:db8:0:1::1', 128));
    check_same('fe80::/64', Tkshm\client_key('fe80::1%eth0'), 'zone ignored');
});

test('client_key refuses what is not an address or a prefix', function () {
    foreach (['', 'example.com', '192.0.2', '256.0.0.1', '2001:db8::1::2', '1.2.3.4 '] as $bad) {
        check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => Tkshm\client_key($bad), show($bad));
    }
    foreach ([0, 129, -1, 4294967296 + 64] as $bits) {
        check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => Tkshm\client_key('2001:db8::1', $bits), "prefix $bits");
    }
    check_throws(ValueError::class, null, fn() => Tkshm\client_key("192.0.2.7\0x"), 'NUL');
});

run();
