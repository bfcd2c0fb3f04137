<?php
/*
 * The loaded extension's API is the one tkshm.stub.php declares: the stub
 * is loaded as plain PHP in a second interpreter without the extension,
 * both APIs are read through Reflection (api_dump.php), and they must be
 * identical: every constant and its value, every class's parent, flags and
 * properties, every method's and function's parameters (names, types,
 * defaults) and return type.  This is what keeps the hand-written
 * src/tkshm_arginfo.h honest.
 */

declare(strict_types=1);

require __DIR__ . '/harness.php';
require __DIR__ . '/api_dump.php';

function stub_api(): array
{
    $cmd = [PHP_BINARY, '-n', __DIR__ . '/api_dump.php', __DIR__ . '/../tkshm.stub.php'];
    $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
    check_true(is_resource($p), 'start ' . PHP_BINARY);
    $out = stream_get_contents($pipes[1]);
    $err = stream_get_contents($pipes[2]);
    $rc = proc_close($p);
    check_same(0, $rc, "api_dump.php of the stub failed: $err");
    return json_decode($out, true, 512, JSON_THROW_ON_ERROR);
}

/* The paths where two nested arrays differ, for a readable failure. */
function differences(mixed $a, mixed $b, string $at = ''): array
{
    if (is_array($a) && is_array($b)) {
        $out = [];
        foreach (array_unique(array_merge(array_keys($a), array_keys($b))) as $k) {
            $out = array_merge($out, differences($a[$k] ?? '(missing)', $b[$k] ?? '(missing)', "$at/$k"));
        }
        return $out;
    }
    return $a === $b ? [] : ["$at: stub " . show($a) . ', extension ' . show($b)];
}

$stub = null;

test('the stub declares the whole API', function () use (&$stub) {
    $stub = stub_api();
    check_same(30 + 6 + 1, count($stub['constants']), 'constants: 30 codes, KEY_MAX, 5 flags, LIBRARY_VERSION');
    foreach ($stub['classes'] + $stub['functions'] as $name => $v) {
        check_true($v !== null, "$name declared");
    }
});

test('the extension has exactly the stub\'s API', function () use (&$stub) {
    $ext = json_decode(json_encode(tkshm_api(), JSON_THROW_ON_ERROR), true);
    check_same([], differences($stub, $ext));
});

test('the constants are the library\'s codes', function () {
    // a spot check from outside the stub: the codes are stable (tkshm.h)
    check_same(-30900, Tkshm\ENULL);
    check_same(-30920, Tkshm\EFULL);
    check_same(-30928, Tkshm\EREDIS);
    check_same(-30929, Tkshm\ECROSSSLOT);
    check_same(1024, Tkshm\KEY_MAX);
});

run();
