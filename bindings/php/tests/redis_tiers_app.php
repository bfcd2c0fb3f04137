<?php
/*
 * The PHP side of test_redis_tiers.py (ctest php_redis_tiers): run as
 * `php -n -d extension=tkshm.so redis_tiers_app.php '<json>'`, it does one
 * step the driver asks for and prints its figures as one line of JSON.
 * The Redis servers, the cluster, the sentinels and tkshm-syncd are the
 * driver's; this script only opens tables and checks.
 *
 *   {"op": "probe"}                 exits 77 (saying why) without pcntl or
 *                                   without the library's Redis tier
 *   {"op": "strict", ...}           a strict table, 4 forked processes
 *                                   checking `keys` at once: `own` of them
 *                                   open their own table file and
 *                                   Tkshm\Redis after the fork (other
 *                                   hosts), the rest use the parent's
 *                                   handles, already connected
 *   {"op": "checks", ...}           `n` checks of `key` in this process
 *   {"op": "create", ...}           creates a (lease) table
 *   {"op": "lease", ...}            4 forked processes checking `keys` of
 *                                   a lease table served by tkshm-syncd
 *                                   until every key has had `limit`
 *                                   admissions (or `timeoutS`), then
 *                                   `overrunS` more
 *
 * Each child writes its counts to `dir`; the parent sums them.  Per key:
 * admitted and denied (decided on Redis or a lease), cached (denials from
 * the negative cache, among denied), noLease (among denied), fallback and
 * fallbackAdmitted (decided by the failure policy), errors.
 */

declare(strict_types=1);

const FIELDS = ['admitted', 'denied', 'cached', 'noLease', 'fallback', 'fallbackAdmitted', 'errors'];

function out(array $v): void
{
    echo json_encode($v, JSON_UNESCAPED_SLASHES), "\n";
}

function fail(string $why): never
{
    fwrite(STDERR, "redis_tiers_app: $why\n");
    exit(1);
}

function zero_counts(array $keys): array
{
    $c = [];
    foreach ($keys as $k) {
        $c[$k] = array_fill_keys(FIELDS, 0);
    }
    return $c;
}

/* One check of $key counted into $c[$key]; the first error's message kept. */
function count_check(Tkshm\Table $t, string $key, array &$c, array &$messages): ?Tkshm\Decision
{
    try {
        $d = $t->check($key);
    } catch (Tkshm\Exception $e) {
        $c[$key]['errors']++;
        if (count($messages) < 5) {
            $messages[] = "$key: {$e->getMessage()} ({$e->getCode()})";
        }
        return null;
    }
    if ($d->flags & Tkshm\DECISION_FALLBACK) {
        $c[$key]['fallback']++;
        $c[$key]['fallbackAdmitted'] += $d->allowed ? 1 : 0;
    } elseif ($d->allowed) {
        $c[$key]['admitted']++;
    } else {
        $c[$key]['denied']++;
        $c[$key]['cached'] += ($d->flags & Tkshm\DECISION_CACHED) ? 1 : 0;
        $c[$key]['noLease'] += ($d->flags & Tkshm\DECISION_NO_LEASE) ? 1 : 0;
    }
    return $d;
}

/* Atomic: written beside, then renamed over. */
function put_json(string $path, array $v): void
{
    file_put_contents("$path.tmp", json_encode($v));
    rename("$path.tmp", $path);
}

function wait_file(string $path, float $timeoutS): bool
{
    $deadline = microtime(true) + $timeoutS;
    while (!file_exists($path)) {
        if (microtime(true) > $deadline) {
            return false;
        }
        usleep(1000);
    }
    return true;
}

/* Forks $procs children running $body($i) (which returns what the child
 * reports); they start together once all are ready (their handles
 * opened), and the parent runs $whileRunning($ready) meanwhile.  Returns
 * the children's reports. */
function fork_children(int $procs, string $dir, string $tag, callable $open, callable $body,
    ?callable $whileRunning = null): array
{
    $pids = [];
    for ($i = 0; $i < $procs; $i++) {
        $pid = pcntl_fork();
        if ($pid < 0) {
            fail('fork failed');
        }
        if ($pid === 0) {
            $code = 3;
            try {
                $ctx = $open($i);
                touch("$dir/$tag-ready-$i");
                if (!wait_file("$dir/$tag-go", 30)) {
                    fail("child $i: no start");
                }
                put_json("$dir/$tag-child-$i.json", $body($i, $ctx));
                $code = 0;
            } catch (Throwable $e) {
                fwrite(STDERR, "child $i: " . get_class($e) . ": {$e->getMessage()}\n");
            } finally {
                exit($code);
            }
        }
        $pids[] = $pid;
    }
    for ($i = 0; $i < $procs; $i++) {
        if (!wait_file("$dir/$tag-ready-$i", 30)) {
            fail("child $i did not get ready"); // the others give up in 30 s
        }
    }
    touch("$dir/$tag-go");
    if ($whileRunning) {
        $whileRunning();
    }
    $reports = [];
    foreach ($pids as $i => $pid) {
        pcntl_waitpid($pid, $status);
        if (!pcntl_wifexited($status) || pcntl_wexitstatus($status) !== 0) {
            fail("child $i exited with status $status");
        }
        $reports[] = json_decode(file_get_contents("$dir/$tag-child-$i.json"), true);
    }
    return $reports;
}

/* Per key, the children's counts summed. */
function sum_counts(array $keys, array $reports): array
{
    $total = zero_counts($keys);
    foreach ($reports as $r) {
        foreach ($keys as $k) {
            foreach (FIELDS as $f) {
                $total[$k][$f] += $r['counts'][$k][$f];
            }
        }
    }
    return $total;
}

/* Each child's admissions, all keys together. */
function per_child(array $reports): array
{
    return array_map(fn($r) => array_sum(array_column($r['counts'], 'admitted')), $reports);
}

function messages(array $reports): array
{
    return array_merge(...array_map(fn($r) => $r['messages'], $reports));
}

$cfg = json_decode($argv[1] ?? '', true, 64, JSON_THROW_ON_ERROR);
switch ($cfg['op']) {
    case 'probe':
        if (!function_exists('pcntl_fork')) {
            echo "skipped: no pcntl in php -n\n";
            exit(77);
        }
        try {
            new Tkshm\Redis();
        } catch (Tkshm\Exception $e) {
            if ($e->getCode() !== Tkshm\ENOTSUP) {
                throw $e;
            }
            echo "skipped: {$e->getMessage()}\n";
            exit(77);
        }
        out(['php' => PHP_VERSION, 'library' => Tkshm\LIBRARY_VERSION]);
        break;

    case 'strict':
        // {path, policy, redis, keys, warm, procs, own, checks, dir}
        $keys = $cfg['keys'];
        $parent = new Tkshm\Table($cfg['path'], $cfg['policy'], 256, redis: new Tkshm\Redis($cfg['redis']));
        foreach ($cfg['warm'] as $w) { // the parent connects to every node
            $d = $parent->check($w);
            if (!$d->allowed || ($d->flags & Tkshm\DECISION_FALLBACK)) {
                fail("warm-up check of $w not admitted by Redis");
            }
        }
        $t0 = microtime(true);
        $reports = fork_children($cfg['procs'], $cfg['dir'], 'strict-' . bin2hex(random_bytes(3)),
            function (int $i) use ($cfg, $parent) {
                if ($i >= $cfg['own']) {
                    return $parent; // the parent's handles, inherited
                }
                // another host: its own file and Tkshm\Redis, opened here
                $t = new Tkshm\Table("{$cfg['path']}-host$i", $cfg['policy'], 256,
                    redis: new Tkshm\Redis($cfg['redis']));
                foreach ($cfg['warm'] as $w) {
                    $t->peek($w); // connected before the start
                }
                return $t;
            },
            function (int $i, Tkshm\Table $t) use ($cfg, $keys) {
                $c = zero_counts($keys);
                $messages = [];
                for ($n = 0; $n < $cfg['checks']; $n++) {
                    foreach ($keys as $k) {
                        count_check($t, $k, $c, $messages);
                    }
                }
                return ['counts' => $c, 'messages' => $messages];
            });
        $after = [];
        foreach ($keys as $k) {
            $after[$k] = $parent->check($k)->allowed;
        }
        out(['counts' => sum_counts($keys, $reports), 'messages' => messages($reports),
            'perChild' => per_child($reports), 'seconds' => round(microtime(true) - $t0, 3),
            'parentAfter' => $after]);
        break;

    case 'checks':
        // {path, policy, redis, key, n, gapMs}
        $t = new Tkshm\Table($cfg['path'], $cfg['policy'], 256, redis: new Tkshm\Redis($cfg['redis']));
        $c = zero_counts([$cfg['key']]);
        $messages = [];
        $t0 = microtime(true);
        for ($n = 0; $n < $cfg['n']; $n++) {
            count_check($t, $cfg['key'], $c, $messages);
            usleep(1000 * ($cfg['gapMs'] ?? 0));
        }
        out(['counts' => $c, 'messages' => $messages, 'seconds' => round(microtime(true) - $t0, 3)]);
        break;

    case 'create':
        // {path, policy}
        $t = new Tkshm\Table($cfg['path'], $cfg['policy'], 256);
        out(['policy' => $t->policy(), 'change' => $t->change()['kind']]);
        break;

    case 'lease':
        // {path, policy, keys, limit, procs, dir, timeoutS, overrunS}
        $keys = $cfg['keys'];
        $dir = $cfg['dir'];
        $tag = 'lease-' . bin2hex(random_bytes(3));
        $parent = new Tkshm\Table($cfg['path'], $cfg['policy'], 256, keep: true);
        $before = $parent->stats();
        $t0 = microtime(true);
        $firstAll = null;
        $progress = function () use ($cfg, $keys, $dir, $tag) {
            $got = array_fill_keys($keys, 0);
            for ($i = 0; $i < $cfg['procs']; $i++) {
                $p = @file_get_contents("$dir/$tag-progress-$i.json");
                foreach ($p ? json_decode($p, true) : [] as $k => $n) {
                    $got[$k] += $n;
                }
            }
            return $got;
        };
        $reports = fork_children($cfg['procs'], $dir, $tag,
            function (int $i) use ($cfg) {
                // a worker of this host: the same file, its own handle
                return new Tkshm\Table($cfg['path'], $cfg['policy'], 256, keep: true);
            },
            function (int $i, Tkshm\Table $t) use ($keys, $dir, $tag) {
                $c = zero_counts($keys);
                $messages = [];
                $rounds = 0;
                while (!file_exists("$dir/$tag-stop")) {
                    $admitted = false;
                    foreach ($keys as $k) {
                        $d = count_check($t, $k, $c, $messages);
                        $admitted = $admitted || ($d !== null && $d->allowed);
                    }
                    if ($admitted) {
                        put_json("$dir/$tag-progress-$i.json", array_map(
                            fn($x) => $x['admitted'] + $x['fallbackAdmitted'], $c));
                    }
                    $rounds++;
                    usleep(1000);
                }
                return ['counts' => $c, 'messages' => $messages, 'rounds' => $rounds];
            },
            function () use ($cfg, $keys, $dir, $tag, $progress, $t0, &$firstAll) {
                $deadline = $t0 + $cfg['timeoutS'];
                while (microtime(true) < $deadline) {
                    $got = $progress();
                    if ($firstAll === null && min($got) > 0) {
                        $firstAll = microtime(true) - $t0;
                    }
                    if (min($got) >= $cfg['limit']) {
                        break;
                    }
                    usleep(20000);
                }
                usleep((int)(1e6 * $cfg['overrunS'])); // an admission too many would show
                touch("$dir/$tag-stop");
            });
        $after = $parent->stats();
        out(['counts' => sum_counts($keys, $reports), 'messages' => messages($reports),
            'perChild' => per_child($reports), 'seconds' => round(microtime(true) - $t0, 3),
            'firstLeaseS' => $firstAll === null ? null : round($firstAll, 3),
            'rounds' => array_sum(array_column($reports, 'rounds')),
            'tableAllowed' => $after['allowed'] - $before['allowed'],
            'tableDenied' => $after['denied'] - $before['denied']]);
        break;

    default:
        fail("unknown op {$cfg['op']}");
}
