<?php
// /var/www/app/index.php: 100 requests an hour per client address (one
// more every 36 s once spent), counted across all the pool's workers.
// Denied: 429 with Retry-After and the RateLimit headers.
$limits = new Tkshm\Table(getenv('TKSHM_TABLE') ?: '/dev/shm/tkshm-app.tkshm',
                          '100/hour');
try {
    $d = $limits->check(Tkshm\client_key($_SERVER['REMOTE_ADDR']));
} catch (Tkshm\Exception $e) {
    error_log("tkshm: {$e->getMessage()} ({$e->getCode()})");
    $d = null;                              // fail open
}
header('Content-Type: text/plain');
if ($d !== null) {
    foreach (Tkshm\headers($d, 'app') as $name => $value) {
        header("$name: $value");
    }
    if (!$d->allowed) {
        http_response_code(429);
        echo "Too many requests: retry in {$d->retryAfterMs} ms\n";
        exit;
    }
}
echo "Hello from PHP-FPM\n";
