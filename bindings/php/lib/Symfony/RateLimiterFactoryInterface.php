<?php

/*
 * What a limiter factory is, for type declarations: Symfony's own
 * RateLimiterFactoryInterface where the installed Symfony has one (7.3 and
 * later), else this declaration of the same method.  Symfony 5.4's
 * RateLimiterFactory is final and implements no interface, so code that is
 * to take either factory declares this type (or none).
 */

declare(strict_types=1);

namespace Tkshm\Symfony;

use Symfony\Component\RateLimiter\LimiterInterface;

if (interface_exists(\Symfony\Component\RateLimiter\RateLimiterFactoryInterface::class)) {
    class_alias(\Symfony\Component\RateLimiter\RateLimiterFactoryInterface::class, RateLimiterFactoryInterface::class);
} else {
    interface RateLimiterFactoryInterface
    {
        public function create(?string $key = null): LimiterInterface;
    }
}
