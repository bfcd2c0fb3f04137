<?php

/*
 * PSR-4 autoloading of Tkshm\Symfony\ (lib/Symfony/) for applications
 * without Composer: require this file, and Symfony's RateLimiter (with
 * OptionsResolver) through the application's own autoloader, e.g.
 * Debian's /usr/share/php/Symfony/Component/RateLimiter/autoload.php.
 * With Composer, lib/composer.json declares the same mapping (the
 * package tkshm/symfony-rate-limiter; bindings/php/composer.json is the
 * extension's, for PIE).
 */

spl_autoload_register(static function (string $class): void {
    $prefix = 'Tkshm\\Symfony\\';
    if (strncmp($class, $prefix, \strlen($prefix)) !== 0) {
        return;
    }
    $file = __DIR__ . '/Symfony/' . str_replace('\\', '/', substr($class, \strlen($prefix))) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
