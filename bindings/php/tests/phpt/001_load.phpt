--TEST--
tkshm: the extension loads, with its classes, functions and constants
--EXTENSIONS--
tkshm
--FILE--
<?php
var_dump(extension_loaded('tkshm'));
var_dump(phpversion('tkshm') === Tkshm\LIBRARY_VERSION);
foreach (['Tkshm\Table', 'Tkshm\Decision', 'Tkshm\Redis', 'Tkshm\Exception'] as $c) {
    echo $c, ': ', class_exists($c) ? 'yes' : 'no', "\n";
}
var_dump(is_subclass_of('Tkshm\Exception', 'RuntimeException'));
var_dump(function_exists('Tkshm\headers'), function_exists('Tkshm\client_key'));
var_dump(Tkshm\KEY_MAX, Tkshm\EKEYEMPTY);
var_dump(Tkshm\client_key('2001:db8:1:2:3:4:5:6'), Tkshm\client_key('::ffff:192.0.2.7'));
?>
--EXPECT--
bool(true)
bool(true)
Tkshm\Table: yes
Tkshm\Decision: yes
Tkshm\Redis: yes
Tkshm\Exception: yes
bool(true)
bool(true)
bool(true)
int(1024)
int(-30902)
string(17) "2001:db8:1:2::/64"
string(9) "192.0.2.7"
