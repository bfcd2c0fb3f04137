--TEST--
tkshm: a fixed window admits its limit, then denies with Retry-After
--EXTENSIONS--
tkshm
--FILE--
<?php
$path = sys_get_temp_dir() . '/tkshm-phpt-' . md5(__DIR__) . '-002.tkshm';
$t = new Tkshm\Table($path, 'fixedWindow:limit=3,windowMs=60000', 64);
var_dump($t->change()['kind'], $t->policy());
$now = 1700000000000.0;                 // a window starts at ...40000 - 60000
for ($i = 1; $i <= 4; $i++) {
    $d = $t->check('203.0.113.7', 1, $now);
    printf("%d: allowed=%s remaining=%d retryAfterMs=%d\n", $i,
        var_export($d->allowed, true), $d->remaining, $d->retryAfterMs);
}
var_dump($d instanceof Tkshm\Decision, $d->limit, $d->resetAt);
var_dump(Tkshm\headers($d, 'api', 'draft', $now));
// Another key has its own window; a peek consumes nothing.
var_dump($t->peek('198.51.100.1', $now)->remaining);
var_dump($t->check('198.51.100.1', 1, $now)->remaining);
$s = $t->stats();
var_dump($s['allowed'], $s['denied']);
?>
--CLEAN--
<?php
@unlink(sys_get_temp_dir() . '/tkshm-phpt-' . md5(__DIR__) . '-002.tkshm');
?>
--EXPECT--
string(6) "create"
string(34) "fixedWindow:limit=3,windowMs=60000"
1: allowed=true remaining=2 retryAfterMs=0
2: allowed=true remaining=1 retryAfterMs=0
3: allowed=true remaining=0 retryAfterMs=0
4: allowed=false remaining=0 retryAfterMs=40000
bool(true)
int(3)
int(1700000040000)
array(3) {
  ["RateLimit-Policy"]=>
  string(9) ""api";q=3"
  ["RateLimit"]=>
  string(14) ""api";r=0;t=40"
  ["Retry-After"]=>
  string(2) "40"
}
int(3)
int(2)
int(4)
int(1)
