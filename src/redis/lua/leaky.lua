--[[
leaky.lua - ThrottleKit's leaky-bucket shaper (a reservation), decided
exactly as tkshm's src/algorithms/leaky_bucket.h and src/shaper/reserve.c
decide it.

KEYS[1]  the shaper key: a STRING holding the next free departure,
         string.format('%.17g')
ARGV     now, ratePerSec, maxQueueMs, cost        (ThrottleKit's order)
         now = 0: the server's TIME, read once
Reply    { accepted,      1 or 0                               ThrottleKit's
           delayMs,       accepted: ceil(wait); rejected:      ThrottleKit's
                          ceil(delay - maxQueueMs)
           retryAfterMs,  rejected: delayMs; accepted: 0
           wait,          accepted: the exact wait, departure - now, as a
                          bulk string '%.17g' (what tkshm_schedule
                          sleeps); rejected: '0'
           now,           the integer ms decided at (floor(now))
           departure }    the state after; none if absent
ThrottleKit's reply is the first two; items 1-4 are tkshm_reservation's
accepted, delay_ms, retry_after_ms and wait_ms.  The rest of tkshm's
decision follows from the state and now (leaky_bucket.h): limit is
floor(maxQueueMs / T) + 1, reset_at ceil(departure), and remaining the
room left after the departure.

  T = 1000 / ratePerSec     departure = max(state or now, now)
  delay = departure - now
  delay > maxQueueMs: reject (no write)
  otherwise: accept, SET departure + T*cost PX max(1, ceil(that - now))
Admission looks at the wait before this request.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
ceil, COST_MAX, int, fail, num, ttl_arg and now_or_time come from there.
--]]

local key = KEYS[1]
local now = num(1, 'now')
local rate, maxq, cost = num(2, 'ratePerSec'), num(3, 'maxQueueMs'),
	num(4, 'cost')
if now < 0 then
	fail('now must be >= 0')
end
if not (rate > 0) or not (maxq >= 0) then
	fail('ratePerSec must be > 0 and maxQueueMs >= 0')
end
if not (cost > 0) or cost > COST_MAX then
	fail('cost must be > 0 and <= 2^53 - 1')
end
now = now_or_time(now)

local T = 1000 / rate
local raw = redis.call('GET', key)
local st = raw and tonumber(raw) or nil
local departure = now
if st ~= nil and st > now then
	departure = st
end
local delay = departure - now
local nowi = int(floor(now))

if delay > maxq then
	local retry = int(ceil(delay - maxq))
	local reply = { 0, retry, retry, '0', nowi }
	if st ~= nil then
		reply[6] = string.format('%.17g', st)
	end
	return reply
end

local nextd = departure + T * cost
local state = string.format('%.17g', nextd)
redis.call('SET', key, state, 'PX', ttl_arg(nextd - now))
return { 1, int(ceil(delay)), 0, string.format('%.17g', delay), nowi, state }
