<?php
/*
 * Tkshm\Decision is read-only: PHP refuses every write, unset, reference,
 * new property, construction, serialization and subclassing, and a
 * decision keeps the values the library returned.
 */

declare(strict_types=1);

require __DIR__ . '/harness.php';

function a_decision(): Tkshm\Decision
{
    static $t = null;
    $t ??= new Tkshm\Table(temp_dir() . '/decision', 'gcra:limit=10,periodMs=1000,burst=5', 64);
    return $t->check('k' . random_int(0, PHP_INT_MAX), 2, 1000.0);
}

test('fields and types', function () {
    $d = a_decision();
    // gcra burst 5, T = 100 ms, cost 2 at 1000 from cold: 3 left, full at 1200
    check_same(['allowed' => true, 'limit' => 5, 'remaining' => 3, 'resetAt' => 1200, 'retryAfterMs' => 0], fields($d));
    check_same(0, $d->flags, 'flags');
    check_same(['allowed', 'limit', 'remaining', 'resetAt', 'retryAfterMs', 'flags'], array_keys(get_object_vars($d)), 'property order');
});

test('the class is final and readonly, its properties typed and readonly', function () {
    $c = new ReflectionClass(Tkshm\Decision::class);
    check_true($c->isFinal(), 'final');
    check_true($c->isReadOnly(), 'readonly class');
    check_true(!$c->isInstantiable() || $c->getConstructor() === null, 'no public constructor');
    $types = [];
    foreach ($c->getProperties() as $p) {
        check_true($p->isPublic() && $p->isReadOnly() && !$p->isStatic(), $p->getName() . ' public readonly');
        $types[$p->getName()] = (string)$p->getType();
    }
    check_same(['allowed' => 'bool', 'limit' => 'int', 'remaining' => 'int', 'resetAt' => 'int', 'retryAfterMs' => 'int', 'flags' => 'int'], $types);
});

test('writes, unsets, references and increments are refused', function () {
    $d = a_decision();
    $before = fields($d);
    check_throws(Error::class, null, function () use ($d) { $d->allowed = false; }, 'write');
    check_throws(Error::class, null, function () use ($d) { $d->remaining = 100; }, 'write int');
    check_throws(Error::class, null, function () use ($d) { $d->remaining++; }, 'increment');
    check_throws(Error::class, null, function () use ($d) { $d->limit += 1; }, 'compound assignment');
    check_throws(Error::class, null, function () use ($d) { unset($d->resetAt); }, 'unset');
    check_throws(Error::class, null, function () use ($d) { $r = &$d->retryAfterMs; $r = 5; }, 'reference');
    check_throws(Error::class, null, function () use ($d) { $d->extra = 1; }, 'dynamic property');
    check_same($before, fields($d), 'unchanged');
});

test('cannot be constructed, even through Reflection', function () {
    $e = check_throws(Error::class, null, fn() => new Tkshm\Decision(), 'new');
    check_true(str_contains($e->getMessage(), 'cannot be constructed'), $e->getMessage());
    check_throws(ReflectionException::class, null,
        fn() => (new ReflectionClass(Tkshm\Decision::class))->newInstanceWithoutConstructor(),
        'newInstanceWithoutConstructor');
});

test('cannot be serialized or unserialized', function () {
    $d = a_decision();
    check_throws(Exception::class, null, fn() => serialize($d), 'serialize');
    $forged = 'O:14:"Tkshm\\Decision":1:{s:7:"allowed";b:1;}';
    check_throws(Exception::class, null, fn() => unserialize($forged), 'unserialize');
});

test('a clone is an equal, still read-only decision', function () {
    $d = a_decision();
    $c = clone $d;
    check_same(fields($d), fields($c));
    check_same($d->flags, $c->flags);
    check_throws(Error::class, null, function () use ($c) { $c->allowed = false; }, 'write to the clone');
});

test('a denial carries its retry-after', function () {
    $t = new Tkshm\Table(temp_dir() . '/denial', 'fixedWindow:limit=1,windowMs=1000', 64);
    check_true($t->check('x', 1, 5250.0)->allowed, 'first admitted');
    $d = $t->check('x', 1, 5250.0);
    check_same(['allowed' => false, 'limit' => 1, 'remaining' => 0, 'resetAt' => 6000, 'retryAfterMs' => 750], fields($d));
});

run();
