<?php
/*
 * The PHP side of test_php_fpm.py, served by PHP-FPM behind nginx's
 * "location /b".  nginx passes the table's path and policy as FastCGI
 * parameters (the same values as its tkshm_table, so one configuration
 * names both) and the client's X-Api-Key header as HTTP_X_API_KEY, the
 * key nginx's "tkshm_limit ... key=$http_x_api_key" uses on /a.
 *
 *   ?op=ping    the worker answers without a check (readiness)
 *   ?op=check   checks the key: 200 or 429 with the RateLimit headers
 *
 * The body is JSON: the worker's pid, what opening the table did
 * (Table::change(): "none" when it found nginx's table as asked) and the
 * decision.
 */

$t = new Tkshm\Table($_SERVER['TKSHM_TABLE'], $_SERVER['TKSHM_POLICY']);
$out = ['pid' => getmypid(), 'change' => $t->change()['kind']];
if (($_GET['op'] ?? 'check') === 'check') {
    $d = $t->check((string)($_SERVER['HTTP_X_API_KEY'] ?? ''));
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
