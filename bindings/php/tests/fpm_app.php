<?php
/*
 * The application test_fpm.py serves from PHP-FPM.  The pool passes the
 * table's path and policy in its environment (env[...] in the pool's
 * configuration).  The Table is constructed in every request, as a PHP
 * application would; the extension keeps the handle of the worker's first
 * request.
 *
 *   ?op=ping               who am I (no check)
 *   ?op=check&key=K        check K: 200 or 429 with the RateLimit headers
 *   ?op=hold&key=K         check K, send the answer, then sleep 30 s (to
 *                          be killed in the middle of the request)
 *
 * The body is JSON: the worker's pid, Table::openCount(), the pid that
 * opened its handle, and the decision.
 */

$t = new Tkshm\Table(getenv('TKSHM_TEST_TABLE'), getenv('TKSHM_TEST_POLICY'), 1024);
$op = $_GET['op'] ?? 'check';
$out = [
    'pid' => getmypid(),
    'opens' => Tkshm\Table::openCount(),
    'handle_pid' => $t->stats()['handle_pid'],
];
if ($op === 'check' || $op === 'hold') {
    $d = $t->check((string)($_GET['key'] ?? ''));
    $out['allowed'] = $d->allowed;
    $out['remaining'] = $d->remaining;
    foreach (Tkshm\headers($d) as $name => $value) {
        header("$name: $value");
    }
    if (!$d->allowed) {
        http_response_code(429);
    }
}
header('Content-Type: application/json');
echo json_encode($out), "\n";
if ($op === 'hold') {
    flush();        // the answer reaches the client before the sleep
    sleep(30);
} elseif ($op === 'check') {
    usleep(2000);   // keeps a worker busy a little, so that all serve
}
