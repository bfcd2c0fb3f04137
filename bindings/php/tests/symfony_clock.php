<?php
/*
 * A clock that symfony_test.php sets, for Symfony's RateLimiter and for
 * tkshm's adapter alike, so that both decide on one timeline.  Symfony 5.4
 * reads the time with unqualified microtime(true) calls (and sleeps with
 * usleep()) in its own namespaces; PHP looks a function up in the calling
 * namespace first, so the functions below stand in for them, as Symfony's
 * own ClockMock does in its test suite.  Required before any Symfony code
 * runs (a call site binds to the function it finds the first time).
 */

namespace {
    final class SymClock
    {
        public static float $now = 0.0;

        public static function microtime(bool $asFloat): float|string
        {
            if ($asFloat) {
                return self::$now;
            }
            $s = floor(self::$now);
            return sprintf('%.8F %d', self::$now - $s, $s);
        }
    }
}

namespace Symfony\Component\RateLimiter {
    function microtime(bool $asFloat = false): float|string
    {
        return \SymClock::microtime($asFloat);
    }

    function usleep(int $us): void
    {
        \SymClock::$now += $us / 1e6;
    }
}

namespace Symfony\Component\RateLimiter\Policy {
    function microtime(bool $asFloat = false): float|string
    {
        return \SymClock::microtime($asFloat);
    }
}

namespace Symfony\Component\RateLimiter\Storage {
    function microtime(bool $asFloat = false): float|string
    {
        return \SymClock::microtime($asFloat);
    }
}
