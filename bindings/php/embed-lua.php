<?php
/*
 * The Redis scripts as C strings, for the phpize build with
 * --enable-tkshm-bundled (config.m4 adds the rule; make runs it with
 * php-config's PHP):
 *
 *   php -n embed-lua.php OUT.c prelude.lib a.lua b.lua ...
 *
 * Writes what cmake/embed-lua.cmake writes for the CMake build, byte for
 * byte after the first line (a comment): `const char tk_lua_<name>[]` for
 * each script, NUL-terminated, each "local SCRIPT_NAME = '<name>'\n", then
 * src/redis/lua/prelude.lib (the helpers the scripts share), then the
 * script's file.  The ctest php_phpize compares the two files.
 */

declare(strict_types=1);

if ($argc < 3) {
    fwrite(STDERR, "usage: php embed-lua.php OUT.c PRELUDE SCRIPT.lua...\n");
    exit(2);
}

function read_file(string $path): string
{
    $text = file_get_contents($path);
    if ($text === false) {
        fwrite(STDERR, "embed-lua.php: cannot read $path\n");
        exit(1);
    }
    return $text;
}

[, $out, $preludePath] = $argv;
$prelude = read_file($preludePath);
if (!str_ends_with($prelude, "\n")) {
    fwrite(STDERR, "embed-lua.php: $preludePath must end with a newline\n");
    exit(1);
}

$body = "/* Generated from src/redis/lua/ by bindings/php/embed-lua.php. */\n";
foreach (array_slice($argv, 3) as $path) {
    $name = basename($path, '.lua');
    $bytes = "local SCRIPT_NAME = '$name'\n" . $prelude . read_file($path);
    $body .= "const char tk_lua_{$name}[] = {";
    foreach (unpack('C*', $bytes) as $b) {
        $body .= sprintf('0x%02x,', $b);
    }
    $body .= "0x00};\n";
}

// Written aside and renamed: make never sees half a file.
$tmp = "$out.tmp";
if (file_put_contents($tmp, $body) !== strlen($body) || !rename($tmp, $out)) {
    fwrite(STDERR, "embed-lua.php: cannot write $out\n");
    exit(1);
}
