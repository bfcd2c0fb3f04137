<?php
/*
 * Tkshm\Redis: strict tables decided on a real redis-server (Debian's
 * /usr/bin/redis-server), this script's own: 127.0.0.1 on a free port
 * below 45536, no persistence, stopped by its pid when the script ends.
 * Exits 77 (skipped) without redis-server or without the library's Redis
 * tier.  Exact admission across 4 forked processes on inherited handles;
 * the failure policy with the server stopped; bad options refused with
 * nothing changed; a table that is not strict refused; one connection
 * per set of options however many times it is constructed.
 */

declare(strict_types=1);

require __DIR__ . '/harness.php';

const REDIS_SERVER = '/usr/bin/redis-server';

function strict_policy(int $limit, string $prefix, string $failure = 'fail-closed'): string
{
    return "gcra:limit=$limit,periodMs=3600000;mode=strict,prefix=$prefix,failure=$failure";
}

/* A port the kernel says is free now (bound to 0), below 45536. */
function free_port(): int
{
    for ($i = 0; $i < 200; $i++) {
        $s = stream_socket_server('tcp://127.0.0.1:0', $errno, $errstr);
        check_true($s !== false, "bind: $errstr");
        $port = (int)substr(strrchr(stream_socket_get_name($s, false), ':'), 1);
        fclose($s);
        if ($port < 45536) {
            return $port;
        }
    }
    throw new TestFailure('no free port below 45536');
}

/* One line of RESP from $s (a reply's first line). */
function resp_line($s): string
{
    $line = fgets($s);
    return $line === false ? '' : rtrim($line, "\r\n");
}

/* A private redis-server.  Known up when it answers PING on its unix
 * socket, which only it can have made (another server that took the port
 * first never answers there: ours exits). */
final class RedisServer
{
    public int $port = 0;
    public string $dir;
    public string $sock;
    private $proc = null;
    private int $owner;

    public function __construct()
    {
        $this->owner = getmypid();
        // not in temp_dir(), whose cleanup removes files only
        $this->dir = sys_get_temp_dir() . '/tkshm-php-redis-' . getmypid() . '-' . bin2hex(random_bytes(3));
        mkdir($this->dir, 0700);
        $this->sock = $this->dir . '/redis.sock';
        for ($attempt = 0; $attempt < 10; $attempt++) {
            $this->port = free_port();
            $this->spawn();
            if ($this->waitUp()) {
                return;
            }
            $this->stop(false);
        }
        $this->stop();
        throw new TestFailure('redis-server did not start');
    }

    private function spawn(): void
    {
        $cmd = [REDIS_SERVER, '--port', (string)$this->port, '--bind', '127.0.0.1',
            '--save', '', '--appendonly', 'no', '--daemonize', 'no',
            '--dir', $this->dir, '--unixsocket', $this->sock,
            '--unixsocketperm', '700', '--loglevel', 'warning'];
        // killed with this script if it dies before its teardown
        if (is_executable('/usr/bin/setpriv')) {
            $cmd = array_merge(['/usr/bin/setpriv', '--pdeathsig', 'KILL', '--'], $cmd);
        }
        $log = $this->dir . '/redis.log';
        $this->proc = proc_open($cmd, [0 => ['file', '/dev/null', 'r'],
            1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']], $pipes);
        check_true(is_resource($this->proc), 'start redis-server');
    }

    private function running(): bool
    {
        return $this->proc !== null && proc_get_status($this->proc)['running'];
    }

    private function waitUp(): bool
    {
        $deadline = microtime(true) + 10;
        while (microtime(true) < $deadline) {
            if (!$this->running()) {
                return false; // the port was taken: it exited
            }
            $s = @stream_socket_client('unix://' . $this->sock, $errno, $errstr, 1);
            if ($s !== false) {
                fwrite($s, "PING\r\n");
                $up = resp_line($s) === '+PONG';
                fclose($s);
                if ($up) {
                    return true;
                }
            }
            usleep(20000);
        }
        return false;
    }

    /* connected_clients from INFO, this connection included. */
    public function clients(): int
    {
        $s = stream_socket_client('unix://' . $this->sock, $errno, $errstr, 2);
        check_true($s !== false, "connect: $errstr");
        fwrite($s, "INFO clients\r\n");
        $len = (int)substr(resp_line($s), 1);
        $body = '';
        while (strlen($body) < $len + 2 && !feof($s)) {
            $body .= fread($s, $len + 2 - strlen($body));
        }
        fclose($s);
        check_true(preg_match('/connected_clients:(\d+)/', $body, $m) === 1, 'INFO clients');
        return (int)$m[1];
    }

    /* SIGTERM by pid, up to 5 s, then SIGKILL, and its directory
     * removed unless $removeDir is false; only by its owner. */
    public function stop(bool $removeDir = true): void
    {
        if (getmypid() !== $this->owner) {
            return;
        }
        if ($this->proc !== null) {
            $this->kill();
        }
        if ($removeDir && is_dir($this->dir)) {
            foreach (glob($this->dir . '/*') ?: [] as $f) {
                unlink($f);
            }
            rmdir($this->dir);
        }
    }

    private function kill(): void
    {
        if ($this->running()) {
            proc_terminate($this->proc, 15);
            $deadline = microtime(true) + 5;
            while ($this->running() && microtime(true) < $deadline) {
                usleep(10000);
            }
            if ($this->running()) {
                proc_terminate($this->proc, 9);
            }
        }
        proc_close($this->proc);
        $this->proc = null;
    }
}

if (!is_executable(REDIS_SERVER)) {
    echo "skipped: no " . REDIS_SERVER . " (Debian's redis-server)\n";
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

$server = new RedisServer();
register_shutdown_function(fn() => $server->stop());
$opts = ['port' => $server->port, 'commandTimeoutMs' => 2000];

test('a strict table without Redis: ENOREDIS', function () {
    $t = new Tkshm\Table(temp_dir() . '/none', strict_policy(5, 'none'), 64);
    check_throws(Tkshm\Exception::class, Tkshm\ENOREDIS, fn() => $t->check('k'));
});

test('attached, it decides on Redis; attach(null) detaches', function () use ($opts) {
    $t = new Tkshm\Table(temp_dir() . '/att', strict_policy(3, 'att'), 64);
    $t->attach(new Tkshm\Redis($opts)); // the table keeps the object
    $got = [];
    for ($i = 0; $i < 5; $i++) {
        $got[] = $t->check('k')->allowed;
    }
    check_same([true, true, true, false, false], $got);
    check_same(3, $t->peek('other')->remaining, 'peek reads Redis');
    $t->attach(null);
    check_throws(Tkshm\Exception::class, Tkshm\ENOREDIS, fn() => $t->check('k'), 'detached');
    $t->attach(null); // twice is fine
    // the redis argument of the constructor; the attachment is the
    // process's handle's: a later construction without one keeps it
    $u = new Tkshm\Table(temp_dir() . '/att', strict_policy(3, 'att'), 64, redis: new Tkshm\Redis($opts));
    $v = new Tkshm\Table(temp_dir() . '/att', strict_policy(3, 'att'), 64);
    check_same(false, $v->check('k')->allowed, 'still attached: Redis denies');
    check_same(true, $u->check('fresh')->allowed);
});

test('the same options give the same handle: one connection', function () use ($opts, $server) {
    $before = $server->clients();
    $a = new Tkshm\Table(temp_dir() . '/one-a', strict_policy(5, 'onea'), 64);
    $b = new Tkshm\Table(temp_dir() . '/one-b', strict_policy(5, 'oneb'), 64);
    $o = $opts + ['db' => 3]; // options no other test uses: a new handle
    for ($i = 0; $i < 20; $i++) { // every request of a worker
        $a->attach(new Tkshm\Redis($o));
        $b->attach(new Tkshm\Redis(array_reverse($o, true)));
        check_true($a->check('k', 0.1)->allowed && $b->check('k', 0.1)->allowed, 'admitted');
    }
    check_same($before + 1, $server->clients(), 'one new connection');
    $a->attach(null);
    $b->attach(null);
});

test('4 forked processes on the inherited handles admit exactly the limit', function () use ($opts) {
    $limit = 10;
    $procs = 4;
    $checks = 25;
    $path = temp_dir() . '/fork';
    $t = new Tkshm\Table($path, strict_policy($limit, 'fork'), 64, redis: new Tkshm\Redis($opts));
    check_true($t->check('warm')->allowed, 'the parent connects first');
    $pids = [];
    for ($p = 0; $p < $procs; $p++) {
        $pid = pcntl_fork();
        check_true($pid >= 0, 'fork');
        if ($pid === 0) {
            $code = 3;
            try {
                $n = 0;
                for ($i = 0; $i < $checks; $i++) {
                    $n += $t->check('hot')->allowed ? 1 : 0;
                }
                file_put_contents("$path-count-$p", (string)$n);
                $code = 0;
            } finally {
                // the harness's and the server's shutdown functions leave
                // what the parent owns alone
                exit($code);
            }
        }
        $pids[] = $pid;
    }
    $total = 0;
    foreach ($pids as $p => $pid) {
        pcntl_waitpid($pid, $status);
        check_true(pcntl_wifexited($status) && pcntl_wexitstatus($status) === 0, "child $p exited 0");
        $total += (int)file_get_contents("$path-count-$p");
    }
    check_same($limit, $total, 'admitted by the 4 children');
    check_same(false, $t->check('hot')->allowed, 'the parent agrees');
    $t->attach(null);
});

test('a table that is not strict: ENOTSUP, nothing opened', function () use ($opts) {
    $r = new Tkshm\Redis($opts);
    $path = temp_dir() . '/local';
    $t = new Tkshm\Table($path, 'gcra:limit=5,periodMs=1000', 64);
    check_throws(Tkshm\Exception::class, Tkshm\ENOTSUP, fn() => $t->attach($r));
    check_true($t->check('k')->allowed, 'still a local table');
    $t->attach(null); // nothing attached: nothing to detach
    check_throws(Tkshm\Exception::class, Tkshm\ENOTSUP,
        fn() => new Tkshm\Table(temp_dir() . '/local2', 'gcra:limit=5,periodMs=1000', 64, redis: $r));
    check_true(!file_exists(temp_dir() . '/local2'), 'refused before the open');
    check_throws(TypeError::class, null, fn() => $t->attach(new stdClass()));
});

test('bad options throw EINVAL (or TypeError) and change nothing', function () use ($opts) {
    $t = new Tkshm\Table(temp_dir() . '/bad', strict_policy(4, 'bad'), 64, redis: new Tkshm\Redis($opts));
    check_true($t->check('k')->allowed, 'first');
    $bad = [
        ['port' => 0], ['port' => 70000], ['port' => -1],
        ['cluster' => '127.0.0.1:7000', 'sentinels' => '127.0.0.1:26379', 'sentinelMaster' => 'm'],
        ['sentinels' => ['127.0.0.1:26379']], ['sentinelMaster' => 'm'],
        ['cluster' => []], ['cluster' => ''], ['cluster' => '127.0.0.1:7000', 'port' => 6379],
        ['host' => 'h', 'unixPath' => '/tmp/x.sock'], ['connectTimeoutMs' => -1],
        ['commandTimeoutMs' => 0.5], ['breakerOpenMs' => 3600001], ['breakerFailures' => -1],
        ['db' => -1], ['host' => str_repeat('h', 4096)], ['cluster' => 'not an address'],
        ['host' => "a\0b"], ['nosuch' => 1], ['command_timeout_ms' => 50], [6379],
    ];
    foreach ($bad as $o) {
        check_throws(Tkshm\Exception::class, Tkshm\EINVAL, fn() => new Tkshm\Redis($o), json_encode($o));
    }
    foreach ([['port' => '6379'], ['cluster' => 5], ['cluster' => ['a:1', 2]],
              ['serverTime' => 1], ['commandTimeoutMs' => '50']] as $o) {
        check_throws(TypeError::class, null, fn() => new Tkshm\Redis($o), json_encode($o));
    }
    // nothing changed: still attached, still deciding on Redis
    check_same(2, $t->check('k')->remaining, 'still on Redis');
    $t->attach(null);
});

test('good options', function () {
    foreach ([[], ['host' => 'localhost', 'port' => 7000], ['unixPath' => '/run/redis.sock'],
              ['cluster' => ['10.0.0.1:7000', '10.0.0.2:7000']],
              ['sentinels' => '10.0.0.1:26379', 'sentinelMaster' => 'mymaster', 'password' => 's'],
              ['username' => 'u', 'password' => 'p', 'db' => 2, 'connectTimeoutMs' => 50,
               'commandTimeoutMs' => 20.5, 'breakerFailures' => 5, 'breakerOpenMs' => 500,
               'serverTime' => false, 'host' => null]] as $o) {
        check_true(new Tkshm\Redis($o) instanceof Tkshm\Redis, json_encode($o));
    }
    check_throws(Error::class, null, fn() => clone new Tkshm\Redis());
    check_throws(Exception::class, null, fn() => serialize(new Tkshm\Redis()));
});

test('redis-server stopped: fail-closed denies, fail-open admits', function () {
    $down = new RedisServer();
    try {
        $r = new Tkshm\Redis(['port' => $down->port, 'connectTimeoutMs' => 200,
            'commandTimeoutMs' => 200, 'breakerOpenMs' => 60000]);
        $closed = new Tkshm\Table(temp_dir() . '/down-c', strict_policy(100, 'dc', 'fail-closed'), 64, redis: $r);
        $open = new Tkshm\Table(temp_dir() . '/down-o', strict_policy(100, 'do', 'fail-open'), 64, redis: $r);
        foreach ([$closed, $open] as $t) {
            $d = $t->check('k');
            check_true($d->allowed && !($d->flags & Tkshm\DECISION_FALLBACK), 'up: decided on Redis');
        }
        $down->stop();
        for ($i = 0; $i < 5; $i++) {
            $d = $closed->check('k');
            check_true(!$d->allowed && ($d->flags & Tkshm\DECISION_FALLBACK), 'fail-closed denies');
            $d = $open->check('k');
            check_true($d->allowed && ($d->flags & Tkshm\DECISION_FALLBACK), 'fail-open admits');
        }
    } finally {
        $down->stop();
    }
});

run();
