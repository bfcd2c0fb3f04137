<?php

/*
 * One key's limiter on a tkshm table, made by TkshmRateLimiterFactory
 * (bindings/php/README.md, "Symfony RateLimiter").
 */

declare(strict_types=1);

namespace Tkshm\Symfony;

use Symfony\Component\RateLimiter\Exception\MaxWaitDurationExceededException;
use Symfony\Component\RateLimiter\Exception\ReserveNotSupportedException;
use Symfony\Component\RateLimiter\LimiterInterface;
use Symfony\Component\RateLimiter\RateLimit;
use Symfony\Component\RateLimiter\Reservation;
use Tkshm\Decision;
use Tkshm\Table;

/**
 * Symfony's LimiterInterface on one key of a tkshm table: consume() is one
 * check (a denial consumes nothing), reserve() books the tokens at the
 * first instant the table can give them (a check at that future instant:
 * the table then holds them for the caller, and any check before it is
 * decided as of that instant, so nothing is admitted twice), reset()
 * forgets the key.  The results are Symfony's RateLimit and Reservation.
 *
 * Time: the limiter reads the clock (the system's, or the factory's
 * $clock) and passes it to the table in epoch ms.  A RateLimit's retry
 * time is when the table will have the tokens, to the millisecond
 * (rounded up); an admission's is now.
 */
final class TkshmLimiter implements LimiterInterface
{
    /** Booking attempts in one reserve() before it gives up (each one
     *  lost a race for the instant it tried and moved past it). */
    private const MAX_BOOKINGS = 64;

    /** A fixed window's count found in the next window up to this close
     *  to its start (ms) is a clock race between processes, not a
     *  reservation (laterWindowStart()). */
    private const SKEW_MS = 5.0;

    private string $key;

    /**
     * @param Table|null $table   null: a sliding window of limit < 1 (denies all)
     * @param string     $id      Symfony's limiter id ("<factory id>-<key>")
     * @param string     $kind    token_bucket, fixed_window or sliding_window
     */
    public function __construct(
        private ?Table $table,
        string $id,
        private string $kind,
        private int $limit,
        private int $intervalSec,
        private ?\Closure $clock = null,
    ) {
        // tkshm keys are 1 to 1024 bytes; Symfony's ids have no bound.
        $this->key = \strlen($id) > 200 ? "\x01sha256:" . hash('sha256', $id, true) : $id;
    }

    public function consume(int $tokens = 1): RateLimit
    {
        $this->checkTokens($tokens);
        $now = $this->now();
        if ($this->table === null) {
            return $this->denyAll($tokens, $now);
        }
        if ($tokens === 0) {
            return new RateLimit($this->table->peek($this->key, $now)->remaining, self::at($now), true, $this->limit);
        }
        if ($this->kind === 'fixed_window') {
            $start = $this->fixedWindowStart($now);
            if ($start > $now) {
                // The key's count is in a later window (a reservation was
                // booked there): this window has nothing left for it.
                return new RateLimit(0, self::at($start), false, $this->limit);
            }
        }
        $d = $this->table->check($this->key, $tokens, $now);
        if ($d->allowed && $this->kind === 'fixed_window' && ($start = $this->laterWindowStart($d, $now)) !== null) {
            // A reservation for a later window was booked between the look
            // above and this check, which the table then counted in that
            // window: admitting now would act before it.  The unit stays
            // spent (a denial errs early, never late).
            return new RateLimit(0, self::at($start), false, $this->limit);
        }

        return $this->rateLimit($d, $now);
    }

    public function reserve(int $tokens = 1, ?float $maxTime = null): Reservation
    {
        if ($this->kind === 'sliding_window') {
            throw new ReserveNotSupportedException(__CLASS__);
        }
        $this->checkTokens($tokens);
        $now = $this->now();
        if ($tokens === 0) {
            return new Reservation($now / 1000, $this->consume(0));
        }
        // a fixed window's count in a later window (a reservation): from there
        $at = $this->kind === 'fixed_window' ? $this->fixedWindowStart($now) : $now;
        $first = null;
        for ($try = 0; ; $try++) {
            $d = $this->table->check($this->key, $tokens, $at);
            if ($d->allowed) {
                if ($this->kind === 'fixed_window' && ($start = $this->laterWindowStart($d, $at)) !== null) {
                    // counted in a later window than $at's: act when it starts
                    $at = $start;
                }
                if ($at <= $now) {
                    return new Reservation($now / 1000, new RateLimit($d->remaining, self::at($now), true, $this->limit));
                }
                // As Symfony: a reservation to act later is not "accepted".
                return new Reservation($at / 1000, new RateLimit($d->remaining, self::at($at), false, $this->limit));
            }
            $first ??= $d;
            $at += $d->retryAfterMs;       // the decision's wait is from $at
            $wait = ($at - $now) / 1000;
            if (($maxTime !== null && $wait > $maxTime) || $try >= self::MAX_BOOKINGS) {
                throw new MaxWaitDurationExceededException(
                    $try >= self::MAX_BOOKINGS
                        ? sprintf('The rate limiter could not book %d tokens in %d attempts (other processes took every instant tried, up to "%d" seconds ahead).', $tokens, $try + 1, $wait)
                        : sprintf('The rate limiter wait time ("%d" seconds) is longer than the provided maximum time ("%d" seconds).', $wait, $maxTime),
                    new RateLimit($first->remaining, self::at($at), false, $this->limit));
            }
        }
    }

    public function reset(): void
    {
        $this->table?->reset($this->key);
    }

    /** Symfony refuses more tokens than the limit (token bucket, fixed
     *  window) before anything else; a negative count would refund. */
    private function checkTokens(int $tokens): void
    {
        if ($tokens > $this->limit && $this->kind !== 'sliding_window') {
            throw new \InvalidArgumentException($this->kind === 'token_bucket'
                ? sprintf('Cannot reserve more tokens (%d) than the burst size of the rate limiter (%d).', $tokens, $this->limit)
                : sprintf('Cannot reserve more tokens (%d) than the size of the rate limiter (%d).', $tokens, $this->limit));
        }
        if ($tokens < 0) {
            throw new \InvalidArgumentException(sprintf('Cannot consume a negative number of tokens (%d).', $tokens));
        }
    }

    private function rateLimit(Decision $d, float $now): RateLimit
    {
        return $d->allowed
            ? new RateLimit($d->remaining, self::at($now), true, $this->limit)
            : new RateLimit($d->remaining, self::at($now + $d->retryAfterMs), false, $this->limit);
    }

    /** A sliding window of limit < 1, which Symfony accepts: every hit of
     *  one token or more is denied, until the window (from now) ends. */
    private function denyAll(int $tokens, float $now): RateLimit
    {
        $accepted = $this->limit >= $tokens;

        return new RateLimit($this->limit, self::at($accepted ? $now : $now + $this->intervalSec * 1000.0), $accepted, $this->limit);
    }

    /** The start (epoch ms) of the window the key's count is in, when it is
     *  later than $now's (a reservation booked there); else $now. */
    private function fixedWindowStart(float $now): float
    {
        return $this->laterWindowStart($this->table->peek($this->key, $now), $now) ?? $now;
    }

    /** The start (epoch ms) of the window $d (a check or peek at $t) was
     *  decided in, if that window starts more than SKEW_MS after $t; else
     *  null.  The margin: two processes read the clock, then check, and a
     *  window boundary may fall between one's read and its check, after the
     *  other's check has moved the key into the next window; that is a race
     *  of microseconds, not a reservation. */
    private function laterWindowStart(Decision $d, float $t): ?float
    {
        $start = $d->resetAt - $this->intervalSec * 1000.0;

        return $start > $t + self::SKEW_MS ? $start : null;
    }

    /** Now in epoch ms. */
    private function now(): float
    {
        return ($this->clock !== null ? ($this->clock)() : microtime(true)) * 1000;
    }

    /** Epoch ms, rounded up to a whole ms, as the DateTimeImmutable a
     *  RateLimit carries (UTC).  The last one is kept: the checks of one
     *  millisecond share it (it is immutable). */
    private static function at(float $ms): \DateTimeImmutable
    {
        static $lastMs = null, $last = null;
        $ms = (int) ceil($ms);
        if ($ms !== $lastMs) {
            $last = \DateTimeImmutable::createFromFormat('U.u', sprintf('%d.%03d', intdiv($ms, 1000), $ms % 1000));
            $lastMs = $ms;
        }

        return $last;
    }
}
