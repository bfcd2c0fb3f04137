--TEST--
tkshm: bad input throws Tkshm\Exception with the library's code and changes nothing
--EXTENSIONS--
tkshm
--FILE--
<?php
$path = sys_get_temp_dir() . '/tkshm-phpt-' . md5(__DIR__) . '-003.tkshm';
$t = new Tkshm\Table($path, 'gcra:limit=10,periodMs=1000', 64);
$cases = [
    'empty key' => [Tkshm\EKEYEMPTY, fn() => $t->check('')],
    'cost 0' => [Tkshm\ECOST, fn() => $t->check('k', 0)],
    'cost NAN' => [Tkshm\ECOST, fn() => $t->check('k', NAN)],
    'key too long' => [Tkshm\EKEYLONG, fn() => $t->check(str_repeat('x', Tkshm\KEY_MAX + 1))],
    'bad policy' => [Tkshm\EPOLICY, fn() => new Tkshm\Table($path, 'nope:limit=1')],
    'bad mode' => [Tkshm\EINVAL, fn() => new Tkshm\Table($path . '.x', 'gcra:limit=1,periodMs=1000', 0, 01000)],
];
foreach ($cases as $what => [$code, $fn]) {
    try {
        $fn();
        echo "$what: no exception\n";
    } catch (Tkshm\Exception $e) {
        printf("%s: %s, message %s\n", $what,
            $e->getCode() === $code ? 'expected code' : 'code ' . $e->getCode(),
            $e->getMessage() !== '' ? 'set' : 'empty');
    }
}
var_dump($t->stats()['allowed'], $t->policy());
var_dump(file_exists($path . '.x'));
?>
--CLEAN--
<?php
@unlink(sys_get_temp_dir() . '/tkshm-phpt-' . md5(__DIR__) . '-003.tkshm');
?>
--EXPECT--
empty key: expected code, message set
cost 0: expected code, message set
cost NAN: expected code, message set
key too long: expected code, message set
bad policy: expected code, message set
bad mode: expected code, message set
int(0)
string(36) "gcra:limit=10,periodMs=1000,burst=10"
bool(false)
