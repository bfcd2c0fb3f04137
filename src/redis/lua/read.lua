--[[
read.lua - a key's state and the server's now, read-only (for a peek: the
caller runs tkshm's peek formula on the decoded state).

KEYS[1]  the key
ARGV     now, type
         now = 0: the server's TIME, read once
         type 1  gcra or leakyBucket: a STRING (GET)
              2  tokenBucket: a HASH t, l (HMGET t l)
              3  fixedWindow or a calendar/fixed quota: a HASH s, c
                 (HMGET s c)
              4  slidingWindow or a rolling quota: a HASH of ring entries
                 (HGETALL)
              5  slidingWindowLog: a ZSET (ZRANGE 0 -1 WITHSCORES)
Reply    { now,                  the integer ms (floor(now))
           state... }            as the check scripts list it; none when
                                 absent

Types 1-3 list the state as the check scripts read it: a value that is
missing or not a number makes the key absent, and numbers are listed as
string.format('%.17g').  Types 4 and 5 list what HGETALL and ZRANGE
WITHSCORES answer, unchanged.  Nothing is written.

The build puts prelude.lib before this file (cmake/embed-lua.cmake); floor,
fail and now_or_time come from there.
--]]

local key = KEYS[1]
local now = tonumber(ARGV[1])
local type = tonumber(ARGV[2])
-- Not num(): a bad now, whatever its fault, has the one message.
if now == nil or now ~= now or now == math.huge or now < 0 then
	fail('now must be a finite number >= 0')
end
if type ~= 1 and type ~= 2 and type ~= 3 and type ~= 4 and type ~= 5 then
	fail('type must be 1..5')
end
now = now_or_time(now)
local reply = { floor(now) }

if type == 1 then
	local raw = redis.call('GET', key)
	local v = raw and tonumber(raw) or nil
	if v ~= nil then
		reply[2] = string.format('%.17g', v)
	end
	return reply
end
if type == 2 or type == 3 then
	local f1, f2 = 't', 'l'
	if type == 3 then
		f1, f2 = 's', 'c'
	end
	local h = redis.call('HMGET', key, f1, f2)
	local a = h[1] and tonumber(h[1]) or nil
	local b = h[2] and tonumber(h[2]) or nil
	if a ~= nil and b ~= nil then
		reply[2] = string.format('%.17g', a)
		reply[3] = string.format('%.17g', b)
	end
	return reply
end
local all
if type == 4 then
	all = redis.call('HGETALL', key)
else
	all = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
end
for i = 1, #all do
	reply[i + 1] = all[i]
end
return reply
