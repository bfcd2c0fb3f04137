<?php

/*
 * Symfony's RateLimiter on a tkshm table: a drop-in for
 * Symfony\Component\RateLimiter\RateLimiterFactory (bindings/php/README.md,
 * "Symfony RateLimiter").
 */

declare(strict_types=1);

namespace Tkshm\Symfony;

use Symfony\Component\OptionsResolver\OptionsResolver;
use Symfony\Component\RateLimiter\Exception\InvalidIntervalException;
use Symfony\Component\RateLimiter\LimiterInterface;
use Symfony\Component\RateLimiter\Policy\NoLimiter;
use Symfony\Component\RateLimiter\Policy\Rate;
use Symfony\Component\RateLimiter\Policy\TokenBucketLimiter;
use Symfony\Component\RateLimiter\RateLimiterFactory;
use Symfony\Component\RateLimiter\Storage\InMemoryStorage;
use Symfony\Component\RateLimiter\Util\TimeUtil;
use Tkshm\Table;

/**
 * Makes limiters from the option array Symfony's RateLimiterFactory takes
 * (`id`, `policy` token_bucket|fixed_window|sliding_window|no_limit,
 * `limit`, `interval`, `rate` {interval, amount}), deciding on one shared
 * tkshm table per factory instead of a cache pool and a lock:
 *
 *   token_bucket   -> tokenBucket:capacity=limit,refillPerSec=amount/interval
 *   fixed_window   -> fixedWindow:limit=limit,windowMs=interval
 *   sliding_window -> slidingWindow:limit=limit,windowMs=interval,buckets=1
 *   no_limit       -> Symfony's own NoLimiter (no table)
 *
 * Three options of its own say where the table lives:
 *   table       a path, or a name without "/" (a file in /dev/shm);
 *               default "tkshm-symfony-<id>"
 *   slots       the table's slots (0: the extension's default, 65536)
 *   table_mode  its permission bits when this process creates it (0600)
 *
 * The Symfony options are validated by Symfony's own RateLimiterFactory,
 * so a bad option throws the exception Symfony throws, with its message,
 * at the same call (the constructor, or the first create()).
 *
 * $clock (seconds since the epoch as a float, as microtime(true)) replaces
 * the system clock: for tests.
 */
final class TkshmRateLimiterFactory implements RateLimiterFactoryInterface
{
    /** The options this factory adds to Symfony's, and their defaults. */
    private const OWN = ['table' => null, 'slots' => 0, 'table_mode' => 0600];

    /** @var array<string, Table> tables of this request, by path, policy, slots and mode */
    private static array $tables = [];

    private RateLimiterFactory $symfony;
    private string $id;
    private string $kind;
    private int $limit = 0;
    private int $intervalSec = 0;
    private int $amount = 0;
    private ?string $policy = null;
    private string $path;
    private int $slots;
    private int $mode;
    private ?\Closure $clock;
    private bool $checked = false;

    public function __construct(array $config, ?callable $clock = null)
    {
        $own = array_intersect_key($config, self::OWN);
        // Symfony's resolver, exceptions and messages, without our options.
        $this->symfony = new RateLimiterFactory(array_diff_key($config, self::OWN), new InMemoryStorage());

        $r = new OptionsResolver();
        $r->define('table')->default(null)->allowedTypes('string', 'null')
          ->define('slots')->default(0)->allowedTypes('int')
          ->define('table_mode')->default(0600)->allowedTypes('int');
        $own = $r->resolve($own);

        // The resolved options (intervals as DateInterval, the rate as a
        // Rate) are private to Symfony's factory (5.4 to 7.x: $config).
        $resolved = \Closure::bind(fn () => $this->config ?? null, $this->symfony, RateLimiterFactory::class)();
        if (!\is_array($resolved)) {
            throw new \LogicException('Tkshm\Symfony: this Symfony RateLimiterFactory keeps no $config to read');
        }
        $this->id = (string) $resolved['id'];
        $this->kind = $resolved['policy'];
        $this->clock = $clock === null ? null : \Closure::fromCallable($clock);
        $this->slots = $own['slots'];
        $this->mode = $own['table_mode'];
        $this->path = $own['table'] ?? self::defaultTable($this->id);
        if ($this->kind === 'no_limit') {
            return;
        }
        // Missing or mistyped values are left to Symfony's create() to
        // report (the first create() below), as Symfony reports them.
        if (!\is_int($resolved['limit'] ?? null)) {
            return;
        }
        $this->limit = $resolved['limit'];
        if ($this->kind === 'token_bucket') {
            $rate = $resolved['rate'] ?? null;
            if (!$rate instanceof Rate) {
                return;
            }
            // Rate keeps its interval and amount private: its public
            // arithmetic gives both (the interval in Symfony's whole seconds).
            $this->intervalSec = $rate->calculateTimeForTokens(1);
            $this->amount = $this->intervalSec < 1 ? 0
                : $rate->calculateNewTokensDuringInterval((float) $this->intervalSec);
            if ($this->intervalSec >= 1 && $this->amount >= 1 && $this->limit >= 1) {
                $this->policy = 'tokenBucket:capacity=' . $this->limit .
                    ',refillPerSec=' . self::number($this->amount / $this->intervalSec);
            }
            return;
        }
        $interval = $resolved['interval'] ?? null;
        if (!$interval instanceof \DateInterval) {
            return;
        }
        $this->intervalSec = TimeUtil::dateIntervalToSeconds($interval);
        if ($this->limit >= 1 && $this->intervalSec >= 1) {
            $windowMs = $this->intervalSec * 1000;
            $this->policy = $this->kind === 'fixed_window'
                ? "fixedWindow:limit={$this->limit},windowMs=$windowMs"
                : "slidingWindow:limit={$this->limit},windowMs=$windowMs,buckets=1";
        }
    }

    public function create(?string $key = null): LimiterInterface
    {
        if (!$this->checked) {
            // Symfony's own limiter construction, once: the same
            // TypeError, InvalidArgumentException... for the same options.
            $this->symfony->create($key);
            $this->checked = true;
        }
        if ($this->kind === 'no_limit') {
            return new NoLimiter();
        }
        if ($this->intervalSec < 1) {
            // Symfony's limiters count intervals in whole seconds: under
            // one second it is 0, which its sliding window refuses with
            // this exception (at the first consume) and its token bucket
            // divides by.  tkshm refuses it here, for every policy.
            throw new InvalidIntervalException(sprintf('The interval must be positive integer, "%d" given.', $this->intervalSec));
        }
        if ($this->kind === 'token_bucket' && $this->limit < 1) {
            // Symfony's TokenBucket throws this at the first consume.
            throw new \InvalidArgumentException(sprintf('Cannot set the limit of "%s" to 0, as that would never accept any hit.', TokenBucketLimiter::class));
        }
        if ($this->kind === 'token_bucket' && $this->amount < 1) {
            // Symfony's bucket never refills and divides by the amount.
            throw new \InvalidArgumentException(sprintf('The rate amount must be at least 1, %d given.', $this->amount));
        }
        // What remains without a policy is a sliding window of limit < 1,
        // which Symfony accepts and which denies every hit: so does the
        // limiter without a table.
        $table = $this->policy === null ? null : $this->table();

        return new TkshmLimiter($table, $this->id . '-' . $key, $this->kind, $this->limit, $this->intervalSec, $this->clock);
    }

    /** The table's path as given to Tkshm\Table (a name is in /dev/shm). */
    public function tablePath(): string
    {
        return $this->path;
    }

    /** The tkshm policy string the Symfony options map to (null: no table). */
    public function policy(): ?string
    {
        return $this->policy;
    }

    private function table(): Table
    {
        $k = $this->path . "\0" . $this->policy . "\0" . $this->slots . "\0" . $this->mode;

        return self::$tables[$k] ??= new Table($this->path, $this->policy, $this->slots, $this->mode);
    }

    /** "tkshm-symfony-<id>", the id made a safe file name. */
    private static function defaultTable(string $id): string
    {
        $safe = preg_replace('/[^A-Za-z0-9._-]/', '_', $id);
        if ($safe !== $id || $id === '' || \strlen($id) > 64) {
            $safe = substr($safe, 0, 64) . '-' . substr(hash('sha256', $id), 0, 16);
        }

        return 'tkshm-symfony-' . $safe;
    }

    /** A double as a policy-string number (JSON notation, locale-free). */
    private static function number(float $x): string
    {
        if ($x === floor($x) && abs($x) < 2 ** 53) {
            return (string) (int) $x;
        }
        $s = json_encode($x, JSON_PRESERVE_ZERO_FRACTION);
        // serialize_precision -1 (PHP's default) gives the shortest
        // round-trip form; a php.ini with 17 still gives a valid number.
        return $s;
    }
}
