--[[
token_bucket.lua - ThrottleKit's tokenBucket.check, decided exactly as
tkshm's src/algorithms/token_bucket.h decides it.

KEYS[1]  the limiter key: a HASH, t = tokens, l = last refill time, both
         string.format('%.17g')
ARGV     now, capacity, refillPerSec, cost        (ThrottleKit's order)
         now = 0: the server's TIME, read once
Reply    { allowed, limit, remaining, resetAt, retryAfterMs,   ThrottleKit's
           now,                    the integer ms decided at (floor(now))
           t, l }                  the state after; none if absent

  refillPerMs = refillPerSec / 1000
  tokens = min(capacity, (t or capacity) + max(0, now - (l or now)) * r)
  admit iff tokens >= cost: t' = tokens - cost, l' = max(l, now)
  Decision.limit = capacity

As in tkshm, an admission keeps the later `last` (l' = max(l, now); on a
forward timeline that is ThrottleKit's l' = now), and a `last` ahead of now
adds its wait to resetAt and retryAfterMs (0 on a forward timeline).  An
admission writes HSET t l and PEXPIRE max(1, ceil(wait + capacity / r))
(ThrottleKit's TTL when wait = 0); a denial writes nothing.  A hash
missing either field, or holding a non-number, decides as an absent key.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
ceil, COST_MAX, int, floor0, fail, num, ttl_arg and now_or_time come from
there.
--]]

local key = KEYS[1]
local now = num(1, 'now')
local capacity, refill, cost =
	num(2, 'capacity'), num(3, 'refillPerSec'), num(4, 'cost')
if now < 0 then
	fail('now must be >= 0')
end
if not (capacity > 0) or not (refill > 0) then
	fail('capacity and refillPerSec must be > 0')
end
if not (cost > 0) or cost > COST_MAX then
	fail('cost must be > 0 and <= 2^53 - 1')
end
now = now_or_time(now)

local r = refill / 1000
local h = redis.call('HMGET', key, 't', 'l')
local prev = h[1] and tonumber(h[1]) or nil
local last = h[2] and tonumber(h[2]) or nil
local present = prev ~= nil and last ~= nil
if not present then
	prev, last = capacity, now
end
local elapsed = 0
if now > last then
	elapsed = now - last
end
local tokens = prev + elapsed * r
if not (tokens < capacity) then
	tokens = capacity -- Math.min(capacity, x)
end
local wait = 0
if last > now then
	wait = last - now
end
local nowi = int(floor(now))

if tokens >= cost then
	local left = tokens - cost
	local l2 = last
	if not (last > now) then
		l2 = now
	end
	local ts, ls = string.format('%.17g', left), string.format('%.17g', l2)
	redis.call('HSET', key, 't', ts, 'l', ls)
	redis.call('PEXPIRE', key, ttl_arg(wait + capacity / r))
	return { 1, int(capacity), floor0(left),
		int(now + ceil(wait + (capacity - left) / r)), 0, nowi, ts, ls }
end

local reply = { 0, int(capacity), floor0(tokens),
	int(now + ceil(wait + (capacity - tokens) / r)),
	int(ceil(wait + (cost - tokens) / r)), nowi }
if present then
	reply[7] = string.format('%.17g', prev)
	reply[8] = string.format('%.17g', last)
end
return reply
