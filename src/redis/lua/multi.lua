--[[
multi.lua - ThrottleKit's multi-dimensional check (all / any), decided and
combined exactly as tkshm's src/api/multi.c does over shared memory.

KEYS     one per dimension (the caller co-locates them with a hash tag,
         `[prefix:]name:{raw}`, so the script runs on Redis Cluster)
ARGV     now, mode (1 = all, 0 = any), n, then per dimension
         type, cost, p1, p2, p3:
           1 gcra         periodMs, limit, burst
           2 tokenBucket  capacity, refillPerSec, (unused)
           3 fixedWindow  limit, windowMs, (unused)
         now = 0: the server's TIME, read once
Reply    { allowed, limit, remaining, resetAt, retryAfterMs,   the binding
           now,                      the integer ms decided at (floor(now))
           then per dimension
           allowed, limit, remaining, resetAt, retryAfterMs }

Each dimension is decided by the formulas of gcra.lua, token_bucket.lua and
fixed_window.lua (see them), on the same key encodings.

  all: every dimension is decided on the stored states first.  If one
       denies, nothing is written and those are the decisions.  Otherwise
       the dimensions are committed in order, each decided again on the
       state the earlier commits left (the same decision, unless two
       dimensions share a key); a dimension that then denies stops it, and
       nothing is written.  Otherwise every dimension is written.
  any: the dimensions are decided in order, each on the state the earlier
       admitted ones left, and every admitted one is written.
  The binding decision (ties go to the earlier dimension): all, some
  denied: the denier with the largest retryAfterMs; all admitted: the
  smallest remaining; any, some admitted: the admitter with the largest
  remaining; any, all denied: the smallest retryAfterMs.

All reads come first and the writes last (a key is written once, with the
last state committed to it).  A key shared by dimensions of different
types is refused with an error, before anything is written.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
ceil, COST_MAX, int, floor0, fail, num, ttl_arg and now_or_time come from
there.
--]]

-- ---------------------------------------------------------------------
-- The three deciders: (dimension, state or nil, now) -> decision, and for
-- an admission the new state and its TTL in ms.  A decision is
-- { allowed (boolean), limit, remaining, resetAt, retryAfterMs }.
-- ---------------------------------------------------------------------

-- gcra.lua's formulas.  State: { tat }.
local function gcra(dim, st, now)
	local T = dim.p1 / dim.p2
	local burst = dim.p3
	local tau = T * burst
	local tat = now
	if st then
		tat = st[1]
	end
	local tatEff = tat
	if not (tat > now) then
		tatEff = now
	end
	local newTat = tatEff + T * dim.cost
	local allowAt = newTat - tau
	if now < allowAt or dim.cost > burst then
		local retry = ceil(allowAt - now)
		if not (retry >= 1) then
			retry = 1
		end
		return { false, int(burst), floor0((tau - (tatEff - now)) / T),
			int(ceil(tatEff)), int(retry) }
	end
	return { true, int(burst), floor0((tau - (newTat - now)) / T),
		int(ceil(newTat)), 0 }, { newTat }, newTat - now
end

-- token_bucket.lua's formulas.  State: { tokens, last }.
local function token_bucket(dim, st, now)
	local capacity, r = dim.p1, dim.p2 / 1000
	local prev, last = capacity, now
	if st then
		prev, last = st[1], st[2]
	end
	local elapsed = 0
	if now > last then
		elapsed = now - last
	end
	local tokens = prev + elapsed * r
	if not (tokens < capacity) then
		tokens = capacity
	end
	local wait = 0
	if last > now then
		wait = last - now
	end
	if tokens >= dim.cost then
		local left = tokens - dim.cost
		local l2 = last
		if not (last > now) then
			l2 = now
		end
		return { true, int(capacity), floor0(left),
			int(now + ceil(wait + (capacity - left) / r)), 0 },
			{ left, l2 }, wait + capacity / r
	end
	return { false, int(capacity), floor0(tokens),
		int(now + ceil(wait + (capacity - tokens) / r)),
		int(ceil(wait + (dim.cost - tokens) / r)) }
end

-- fixed_window.lua's formulas.  State: { start, count }.
local function fixed_window(dim, st, now)
	local limit, window = dim.p1, dim.p2
	local start = floor(now / window) * window
	local reset = start + window
	local count = 0
	if st then
		if st[1] == start then
			count = st[2]
		elseif start < st[1] then
			start = st[1] -- a clock regression: the later window
			reset = start + window
			count = st[2]
		end
	end
	if count + dim.cost <= limit then
		local n = count + dim.cost
		return { true, int(limit), floor0(limit - n), int(ceil(reset)),
			0 }, { start, n }, reset - now
	end
	return { false, int(limit), floor0(limit - count), int(ceil(reset)),
		int(ceil(reset - now)) }
end

local deciders = { gcra, token_bucket, fixed_window }

-- The stored state of a key for a dimension type (nil: absent; a hash
-- missing a field or a non-number decides as absent, as the single
-- scripts do).
local function load(key, type)
	if type == 1 then
		local raw = redis.call('GET', key)
		local tat = raw and tonumber(raw) or nil
		if tat == nil then
			return nil
		end
		return { tat }
	end
	local f1, f2 = 't', 'l'
	if type == 3 then
		f1, f2 = 's', 'c'
	end
	local h = redis.call('HMGET', key, f1, f2)
	local a = h[1] and tonumber(h[1]) or nil
	local b = h[2] and tonumber(h[2]) or nil
	if a == nil or b == nil then
		return nil
	end
	return { a, b }
end

local function store(key, type, st, ttl)
	if type == 1 then
		redis.call('SET', key, string.format('%.17g', st[1]), 'PX',
			ttl_arg(ttl))
		return
	end
	local f1, f2 = 't', 'l'
	if type == 3 then
		f1, f2 = 's', 'c'
	end
	redis.call('HSET', key, f1, string.format('%.17g', st[1]), f2,
		string.format('%.17g', st[2]))
	redis.call('PEXPIRE', key, ttl_arg(ttl))
end

-- ---------------------------------------------------------------------
-- Arguments, then the stored states (all reads), then the decisions.
-- ---------------------------------------------------------------------

local now = num(1, 'now')
local mode, n = num(2, 'mode'), num(3, 'n')
if now < 0 then
	fail('now must be >= 0')
end
if mode ~= 0 and mode ~= 1 then
	fail('mode must be 1 (all) or 0 (any)')
end
if n < 1 or n ~= floor(n) or n ~= #KEYS or #ARGV < 3 + 5 * n then
	fail('n must be the number of KEYS, with 5 ARGV per dimension')
end
local dims = {}
for i = 1, n do
	local b = 3 + 5 * (i - 1)
	local dim = { key = KEYS[i], type = num(b + 1, 'type'),
		cost = num(b + 2, 'cost'), p1 = num(b + 3, 'p1'),
		p2 = num(b + 4, 'p2'), p3 = 0 }
	if dim.type ~= 1 and dim.type ~= 2 and dim.type ~= 3 then
		fail('type must be 1 (gcra), 2 (tokenBucket) or 3 (fixedWindow)')
	end
	if not (dim.cost > 0) or dim.cost > COST_MAX then
		fail('cost must be > 0 and <= 2^53 - 1')
	end
	if not (dim.p1 > 0) or not (dim.p2 > 0) then
		fail('p1 and p2 must be > 0')
	end
	if dim.type == 1 then
		dim.p3 = num(b + 5, 'burst')
		if not (dim.p3 >= 1) then
			fail('burst must be >= 1')
		end
	end
	dims[i] = dim
end
now = now_or_time(now)

local stored, typeof = {}, {} -- per key: its stored state, its type
for i = 1, n do
	local dim = dims[i]
	if typeof[dim.key] == nil then
		typeof[dim.key] = dim.type
		stored[dim.key] = load(dim.key, dim.type) or false
	elseif typeof[dim.key] ~= dim.type then
		fail('a key is shared by dimensions of different types')
	end
end

-- The state of a key in `cur` (false: absent).
local function state_in(cur, key)
	local st = cur[key]
	if st == false then
		return nil
	end
	return st
end

local d = {}
local cur, ttl, written = {}, {}, {}
for k, st in pairs(stored) do
	cur[k] = st
end

-- Decides dimension i on the states in `cur`; an admission updates cur.
local function commit(i)
	local dim = dims[i]
	local dec, st, t = deciders[dim.type](dim, state_in(cur, dim.key), now)
	d[i] = dec
	if dec[1] then
		cur[dim.key], ttl[dim.key], written[dim.key] = st, t, true
	end
	return dec[1]
end

local write = true
if mode == 1 then
	local denied = false
	for i = 1, n do
		local dim = dims[i]
		d[i] = deciders[dim.type](dim, state_in(stored, dim.key), now)
		if not d[i][1] then
			denied = true
		end
	end
	if denied then
		write = false
	else
		for i = 1, n do
			if not commit(i) then
				write = false
				break
			end
		end
	end
else
	for i = 1, n do
		commit(i)
	end
end

-- The binding dimension, by tkshm's tk_binding (ties to the earlier).
local any_allowed, any_denied = false, false
for i = 1, n do
	if d[i][1] then
		any_allowed = true
	else
		any_denied = true
	end
end
local best
for i = 1, n do
	local x = d[i]
	local better = false
	if mode == 1 and any_denied then
		better = not x[1] and (best == nil or x[5] > d[best][5])
	elseif mode == 1 then
		better = best == nil or x[3] < d[best][3]
	elseif any_allowed then
		better = x[1] and (best == nil or x[3] > d[best][3])
	else
		better = best == nil or x[5] < d[best][5]
	end
	if better then
		best = i
	end
end

if write then
	local done = {}
	for i = 1, n do
		local k = dims[i].key
		if written[k] and not done[k] then
			done[k] = true
			store(k, dims[i].type, cur[k], ttl[k])
		end
	end
end

local function flag(b)
	if b then
		return 1
	end
	return 0
end

local b = d[best]
local reply = { flag(b[1]), b[2], b[3], b[4], b[5], int(floor(now)) }
for i = 1, n do
	local x = d[i]
	reply[#reply + 1] = flag(x[1])
	for j = 2, 5 do
		reply[#reply + 1] = x[j]
	end
end
return reply
