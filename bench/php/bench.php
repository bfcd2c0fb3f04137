<?php
/*
 * One case of the PHP benchmark: `procs` processes (pcntl_fork) check keys
 * 'k' . mt_rand(1, keys) in a loop for `seconds`, all through one limiter,
 * and one JSON line with the totals goes to stdout.
 *
 *   php <ini> bench.php --mode M --keys N [--seconds S] [--procs P]
 *
 * Modes (one policy for all: a burst of 100, then 10 per second):
 *   tkshm      Tkshm\Table::check() on gcra:limit=10,periodMs=1000,burst=100
 *              (a file table in /dev/shm, 262144 slots, opened by each
 *              process after the fork, as PHP-FPM workers do)
 *   apcu_gcra  the same GCRA over APCu: apcu_fetch, then apcu_add (a new
 *              key) or apcu_cas (at most 10 tries, as yiisoft/rate-limiter
 *              does), the theoretical arrival time in integer microseconds
 *   symfony    Symfony RateLimiter 5.4 (Debian), token_bucket limit 100,
 *              10 per 1 second, CacheStorage over ApcuAdapter, no lock:
 *              $factory->create($key)->consume(1)->isAccepted()
 *   symfony_tkshm  the same Symfony code and options on tkshm's adapter
 *              (bindings/php/lib: Tkshm\Symfony\TkshmRateLimiterFactory,
 *              a tokenBucket:capacity=100,refillPerSec=10 table in
 *              /dev/shm, 262144 slots)
 *   loop       the loop and the key alone (what every mode also pays)
 *
 * For exactness, each process records the clock before its first check
 * and after its last; with one key (keys = 1, cold at the start) the
 * policy admits 100 + floor(E / 100 ms) (GCRA, and tkshm's token bucket,
 * which refills continuously) or 100 + 10 * floor(E / 1 s) (Symfony's
 * token bucket refills whole intervals) over the E the
 * processes ran, and the line carries both the admitted count and that
 * number.
 *
 * With many keys, one process first checks every key once (all modes'
 * state is shared: the table file, APCu's segment), so that the timed
 * loops measure a warm limiter, not the inserts of 100k new keys; with one
 * key nothing is warmed (the exactness needs a cold key).  The processes
 * then start together (at a time the parent sets), check the clock every
 * 256 checks, and report through a file each.  Needs pcntl;
 * apcu with apc.enable_cli=1 for apcu_gcra and symfony; the tkshm
 * extension for tkshm and symfony_tkshm.
 */

declare(strict_types=1);

const BURST = 100;
const PER_SECOND = 10;
const T_MS = 1000 / PER_SECOND;
const BATCH = 256;

function opts(array $argv): array
{
    $o = ['mode' => null, 'keys' => null, 'seconds' => 3.0, 'procs' => 2];
    for ($i = 1; $i < count($argv); $i++) {
        $name = ltrim($argv[$i], '-');
        if (!array_key_exists($name, $o) || !isset($argv[$i + 1])) {
            fwrite(STDERR, "bench.php: bad argument '{$argv[$i]}'\n");
            exit(2);
        }
        $o[$name] = $argv[++$i];
    }
    if (!in_array($o['mode'], ['tkshm', 'apcu_gcra', 'symfony', 'symfony_tkshm', 'loop'], true) ||
        (int)$o['keys'] < 1 || (float)$o['seconds'] <= 0 || (int)$o['procs'] < 1) {
        fwrite(STDERR, "usage: bench.php --mode tkshm|apcu_gcra|symfony|symfony_tkshm|loop --keys N [--seconds S] [--procs P]\n");
        exit(2);
    }
    return ['mode' => $o['mode'], 'keys' => (int)$o['keys'],
        'seconds' => (float)$o['seconds'], 'procs' => (int)$o['procs']];
}

/* GCRA over APCu in the style of yiisoft/rate-limiter's APCu storage: a
 * compare-and-swap loop on the theoretical arrival time (integer µs,
 * since apcu_cas() takes integers), at most 10 tries. */
function apcu_gcra_check(string $key): bool
{
    $t = (int)(T_MS * 1000);
    $limit = BURST * $t;                       // tau + T
    for ($try = 0; $try < 10; $try++) {
        $now = (int)(microtime(true) * 1e6);
        $tat = apcu_fetch($key, $found);
        if (!$found) {
            if (apcu_add($key, $now + $t, 3600)) {
                return true;
            }
            continue;                           // another process added it
        }
        $new = max($tat, $now) + $t;
        if ($new - $now > $limit) {
            return false;
        }
        if (apcu_cas($key, $tat, $new)) {
            return true;
        }
    }
    return false;                               // gave up: contention
}

/* Each mode's check of one key, as a closure the loop calls. */
function make_check(string $mode, string $tablePath): Closure
{
    switch ($mode) {
    case 'tkshm':
        $table = new Tkshm\Table($tablePath, 'gcra:limit=' . PER_SECOND . ',periodMs=1000,burst=' . BURST, 262144);
        return fn(string $k): bool => $table->check($k)->allowed;
    case 'apcu_gcra':
        return fn(string $k): bool => apcu_gcra_check($k);
    case 'symfony':
        $factory = new Symfony\Component\RateLimiter\RateLimiterFactory([
            'id' => 'bench',
            'policy' => 'token_bucket',
            'limit' => BURST,
            'rate' => ['interval' => '1 second', 'amount' => PER_SECOND],
        ], new Symfony\Component\RateLimiter\Storage\CacheStorage(
            new Symfony\Component\Cache\Adapter\ApcuAdapter('rl')));
        return fn(string $k): bool => $factory->create($k)->consume(1)->isAccepted();
    case 'symfony_tkshm':
        $factory = new Tkshm\Symfony\TkshmRateLimiterFactory([
            'id' => 'bench',
            'policy' => 'token_bucket',
            'limit' => BURST,
            'rate' => ['interval' => '1 second', 'amount' => PER_SECOND],
            'table' => $tablePath,
            'slots' => 262144,
        ]);
        return fn(string $k): bool => $factory->create($k)->consume(1)->isAccepted();
    default:
        return fn(string $k): bool => true;
    }
}

/* The worker: waits for the start, checks until the deadline. */
function work(array $o, string $tablePath, float $startAt, string $out): void
{
    $check = make_check($o['mode'], $tablePath);
    $keys = $o['keys'];
    // Loads and compiles what the first check needs (Symfony's classes)
    // before the clock starts; a key of its own, not one the loop checks.
    $check('warm-' . getmypid());
    while (microtime(true) < $startAt) {
        usleep(200);
    }
    $deadline = $startAt + $o['seconds'];
    $ru0 = getrusage();
    $n = 0;
    $allowed = 0;
    $first = microtime(true);
    do {
        for ($i = 0; $i < BATCH; $i++) {
            if ($check('k' . mt_rand(1, $keys))) {
                $allowed++;
            }
        }
        $n += BATCH;
        $last = microtime(true);
    } while ($last < $deadline);
    $ru1 = getrusage();
    $cpu = ($ru1['ru_utime.tv_sec'] - $ru0['ru_utime.tv_sec']) + ($ru1['ru_utime.tv_usec'] - $ru0['ru_utime.tv_usec']) / 1e6
        + ($ru1['ru_stime.tv_sec'] - $ru0['ru_stime.tv_sec']) + ($ru1['ru_stime.tv_usec'] - $ru0['ru_stime.tv_usec']) / 1e6;
    file_put_contents($out, json_encode(['checks' => $n, 'allowed' => $allowed,
        'first' => $first, 'last' => $last, 'cpu_s' => $cpu]));
}

$o = opts($argv);
if ($o['mode'] === 'symfony') {
    require_once '/usr/share/php/Symfony/Component/RateLimiter/autoload.php';
    require_once '/usr/share/php/Symfony/Component/Cache/autoload.php';
}
if ($o['mode'] === 'symfony_tkshm') {
    require_once '/usr/share/php/Symfony/Component/RateLimiter/autoload.php';
    require_once dirname(__DIR__, 2) . '/bindings/php/lib/autoload.php';
}
if (in_array($o['mode'], ['apcu_gcra', 'symfony'], true)) {
    if (!function_exists('apcu_enabled') || !apcu_enabled()) {
        fwrite(STDERR, "bench.php: APCu is not enabled (-d extension=apcu -d apc.enable_cli=1)\n");
        exit(2);
    }
    apcu_clear_cache();                         // every case starts cold
}
if (in_array($o['mode'], ['tkshm', 'symfony_tkshm'], true) && !extension_loaded('tkshm')) {
    fwrite(STDERR, "bench.php: the tkshm extension is not loaded\n");
    exit(2);
}

/* Runs $fn in a child process; returns its pid. */
function spawn(callable $fn): int
{
    $pid = pcntl_fork();
    if ($pid < 0) {
        fwrite(STDERR, "bench.php: fork failed\n");
        exit(1);
    }
    if ($pid === 0) {
        $fn();
        exit(0);
    }
    return $pid;
}

$tag = 'tkshm-bench-php-' . getmypid();
$tablePath = "/dev/shm/$tag.tkshm";
if ($o['keys'] > 1) {
    // A process of its own: the workers must not inherit its table handle.
    $pid = spawn(function () use ($o, $tablePath) {
        $check = make_check($o['mode'], $tablePath);
        for ($k = 1; $k <= $o['keys']; $k++) {
            $check('k' . $k);
        }
    });
    pcntl_waitpid($pid, $status);
    if (!pcntl_wifexited($status) || pcntl_wexitstatus($status) !== 0) {
        fwrite(STDERR, "bench.php: warming up failed\n");
        exit(1);
    }
}
$startAt = microtime(true) + 0.3;               // after every fork
$children = [];
for ($p = 0; $p < $o['procs']; $p++) {
    $out = sys_get_temp_dir() . "/$tag-$p.json";
    $children[spawn(fn() => work($o, $tablePath, $startAt, $out))] = $out;
}
$results = [];
$failed = false;
foreach ($children as $pid => $out) {
    pcntl_waitpid($pid, $status);
    $r = is_file($out) ? json_decode((string)file_get_contents($out), true) : null;
    @unlink($out);
    if (!pcntl_wifexited($status) || pcntl_wexitstatus($status) !== 0 || !is_array($r)) {
        $failed = true;
        continue;
    }
    $results[] = $r;
}
@unlink($tablePath);
if ($failed) {
    fwrite(STDERR, "bench.php: a worker failed\n");
    exit(1);
}

$checks = array_sum(array_column($results, 'checks'));
$wall = max(array_column($results, 'last')) - min(array_column($results, 'first'));
$perSec = 0.0;
foreach ($results as $r) {
    $perSec += $r['checks'] / ($r['last'] - $r['first']);
}
$elapsedMs = $wall * 1000;
$policyAdmits = $o['mode'] === 'symfony'
    ? BURST + PER_SECOND * (int)floor($wall)
    : BURST + (int)floor($elapsedMs / T_MS);
echo json_encode([
    'suite' => 'php',
    'record' => 'case',
    'mode' => $o['mode'],
    'keys' => $o['keys'],
    'procs' => $o['procs'],
    'seconds' => $o['seconds'],
    'checks' => $checks,
    'checks_per_sec' => $perSec,
    'allowed' => array_sum(array_column($results, 'allowed')),
    'wall_s' => $wall,
    // meaningful with one key: what the policy admits over wall_s
    'policy_admits' => $o['keys'] === 1 && $o['mode'] !== 'loop' ? $policyAdmits : null,
    'cpu_s' => array_sum(array_column($results, 'cpu_s')),
]), "\n";
