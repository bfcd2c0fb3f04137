<?php
/*
 * The application test_symfony_fpm.py serves from PHP-FPM: Symfony
 * RateLimiter code (a factory, create(), consume(), ensureAccepted(), the
 * X-RateLimit headers) with tkshm's factory in place of Symfony's.  The
 * pool passes the directory for the tables and the limit in its
 * environment.
 *
 *   ?policy=token_bucket|fixed_window|sliding_window&key=K
 *
 * 200 or 429; the body is JSON: the worker's pid, Table::openCount(), and
 * the RateLimit's fields.
 */

declare(strict_types=1);

require '/usr/share/php/Symfony/Component/RateLimiter/autoload.php';
require dirname(__DIR__) . '/lib/autoload.php';

use Symfony\Component\RateLimiter\Exception\RateLimitExceededException;
use Tkshm\Symfony\TkshmRateLimiterFactory;

$limit = (int) getenv('TKSHM_TEST_LIMIT');
// An interval no test outlives: fixed windows are aligned to the epoch, and
// this one ends in 2070.
$configs = [
    'token_bucket' => ['id' => 'api', 'policy' => 'token_bucket', 'limit' => $limit,
        'rate' => ['interval' => '100 years', 'amount' => 1]],
    'fixed_window' => ['id' => 'api', 'policy' => 'fixed_window', 'limit' => $limit, 'interval' => '100 years'],
    'sliding_window' => ['id' => 'api', 'policy' => 'sliding_window', 'limit' => $limit, 'interval' => '100 years'],
];
$policy = (string) ($_GET['policy'] ?? '');
if (!isset($configs[$policy])) {
    http_response_code(400);
    echo json_encode(['error' => 'policy']), "\n";
    exit;
}
// In a Symfony application this is the container's factory service.
$factory = new TkshmRateLimiterFactory($configs[$policy] + [
    'table' => getenv('TKSHM_TEST_DIR') . "/$policy.tkshm",
    'slots' => 1024,
]);

// The consuming code, as it is written for Symfony's own factory.
$limiter = $factory->create((string) ($_GET['key'] ?? ''));
$rl = $limiter->consume(1);
header('X-RateLimit-Remaining: ' . $rl->getRemainingTokens());
header('X-RateLimit-Retry-After: ' . $rl->getRetryAfter()->getTimestamp());
header('X-RateLimit-Limit: ' . $rl->getLimit());
$out = ['pid' => getmypid(), 'opens' => Tkshm\Table::openCount()];
try {
    $rl->ensureAccepted();
    $out['accepted'] = true;
} catch (RateLimitExceededException $e) {
    http_response_code(429);
    $out['accepted'] = false;
}
$out['remaining'] = $rl->getRemainingTokens();
header('Content-Type: application/json');
echo json_encode($out), "\n";
usleep(2000);   // keeps a worker busy a little, so that all serve
