<?php
/*
 * A small test runner for the extension's PHP tests (run by ctest with
 * `php -n -d extension=<build>/php/tkshm.so <name>_test.php <tests/data>`):
 * test('name', fn) registers a case, run() runs them in order, prints one
 * line each and exits 1 if any failed.  Assertions throw TestFailure.
 */

declare(strict_types=1);

final class TestFailure extends \Exception
{
}

$GLOBALS['tkshm_tests'] = [];

function test(string $name, callable $fn): void
{
    $GLOBALS['tkshm_tests'][] = [$name, $fn];
}

function show(mixed $v): string
{
    return var_export($v, true);
}

function check_same(mixed $expected, mixed $actual, string $what = ''): void
{
    if ($expected !== $actual) {
        throw new TestFailure(($what !== '' ? "$what: " : '') .
            'expected ' . show($expected) . ', got ' . show($actual));
    }
}

function check_true(bool $cond, string $what): void
{
    if (!$cond) {
        throw new TestFailure($what);
    }
}

/* Runs $fn, which must throw an instance of $class (with getCode() ===
 * $code when $code is not null); returns the throwable. */
function check_throws(string $class, ?int $code, callable $fn, string $what = ''): \Throwable
{
    try {
        $fn();
    } catch (\Throwable $e) {
        if (!($e instanceof $class)) {
            throw new TestFailure(($what !== '' ? "$what: " : '') .
                "expected $class, got " . get_class($e) . ': ' . $e->getMessage());
        }
        if ($code !== null && $e->getCode() !== $code) {
            throw new TestFailure(($what !== '' ? "$what: " : '') .
                "expected code $code, got " . $e->getCode() . ': ' . $e->getMessage());
        }
        return $e;
    }
    throw new TestFailure(($what !== '' ? "$what: " : '') . "expected $class, nothing thrown");
}

/* A fresh directory for table files, removed when the script ends. */
function temp_dir(): string
{
    static $dir = null;
    if ($dir === null) {
        $dir = sys_get_temp_dir() . '/tkshm-php-' . getmypid() . '-' . bin2hex(random_bytes(4));
        mkdir($dir, 0700);
        $owner = getmypid();
        register_shutdown_function(function () use ($dir, $owner) {
            if (getmypid() !== $owner) {
                return; // a forked child leaves the directory to its parent
            }
            foreach (glob("$dir/*") ?: [] as $f) {
                unlink($f);
            }
            rmdir($dir);
        });
    }
    return $dir;
}

/* The decision's fields as an array, in the golden vectors' names. */
function fields(Tkshm\Decision $d): array
{
    return [
        'allowed' => $d->allowed,
        'limit' => $d->limit,
        'remaining' => $d->remaining,
        'resetAt' => $d->resetAt,
        'retryAfterMs' => $d->retryAfterMs,
    ];
}

function run(): never
{
    if (!extension_loaded('tkshm')) {
        fwrite(STDERR, "the tkshm extension is not loaded (php -d extension=.../tkshm.so)\n");
        exit(1);
    }
    $failed = 0;
    foreach ($GLOBALS['tkshm_tests'] as [$name, $fn]) {
        $t0 = microtime(true);
        try {
            $fn();
            printf("ok   %s (%.0f ms)\n", $name, (microtime(true) - $t0) * 1000);
        } catch (\Throwable $e) {
            $failed++;
            printf("FAIL %s: %s: %s\n  at %s:%d\n", $name, get_class($e),
                $e->getMessage(), $e->getFile(), $e->getLine());
        }
    }
    printf("%d tests, %d failed\n", count($GLOBALS['tkshm_tests']), $failed);
    exit($failed ? 1 : 0);
}
