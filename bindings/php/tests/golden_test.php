<?php
/*
 * ThrottleKit's golden vectors (tests/data/throttlekit-golden-vectors.json,
 * the C suites' external oracle) replayed through the extension: every
 * rateLimit suite (gcra, tokenBucket, fixedWindow, slidingWindow,
 * slidingWindowLog) and every tokenBudget suite, each from a cold key of a
 * new table, all five fields compared exactly, as the C library's own
 * test_golden_vectors.c does: rate-limit suites as given and shifted by
 * +1000 ms (ThrottleKit's Redis offset), tokenBudget suites as given.
 */

declare(strict_types=1);

require __DIR__ . '/harness.php';

$data = $argv[1] ?? __DIR__ . '/../../../tests/data';
$golden = json_decode(file_get_contents("$data/throttlekit-golden-vectors.json"), true, 512, JSON_THROW_ON_ERROR);

/* "kind:option=value,..." from a suite's strategy, in the JSON's order. */
function policy_string(string $kind, array $options): string
{
    $parts = [];
    foreach ($options as $name => $value) {
        $parts[] = $name . '=' . json_encode($value);
    }
    return $kind . ':' . implode(',', $parts);
}

function replay(string $policy, array $ops, string $costField, float $offset, string $tag): int
{
    static $n = 0;
    $t = new Tkshm\Table(temp_dir() . '/golden-' . ++$n, $policy, 64);
    foreach ($ops as $i => $op) {
        $d = $t->check('k', $op[$costField], $op['now'] + $offset);
        $expect = $op['expect'];
        $expect['resetAt'] += (int)$offset;
        check_same($expect, fields($d), "$tag op $i (now {$op['now']} + $offset)");
    }
    return count($ops);
}

$rateLimit = array_values(array_filter($golden['suites'], fn($s) => $s['primitive'] === 'rateLimit'));
$tokenBudget = array_values(array_filter($golden['suites'], fn($s) => $s['primitive'] === 'tokenBudget'));

test('the file has the suites the C suite counts', function () use ($rateLimit, $tokenBudget) {
    check_same(9, count($rateLimit), 'rateLimit suites');
    check_same(54, array_sum(array_map(fn($s) => count($s['ops']), $rateLimit)), 'rateLimit ops');
    check_same(3, count($tokenBudget), 'tokenBudget suites');
});

foreach ([0.0, 1000.0] as $offset) {
    foreach ($rateLimit as $s) {
        test(sprintf('%s (+%d ms)', $s['name'], $offset), function () use ($s, $offset) {
            $policy = policy_string($s['strategy']['kind'], $s['strategy']['options']);
            replay($policy, $s['ops'], 'cost', $offset, $s['name']);
        });
    }
}

foreach ($tokenBudget as $s) {
    test($s['name'], function () use ($s) {
        replay(policy_string('tokenBudget', $s['options']), $s['ops'], 'tokens', 0.0, $s['name']);
    });
}

run();
