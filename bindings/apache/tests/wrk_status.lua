-- wrk script: counts each thread's responses by status (200, 429, other)
-- and prints one line at the end, "statuses 200=N 429=N other=N", which
-- test_change.py reads beside wrk's own socket-error counts.
local threads = {}

function setup(thread)
	table.insert(threads, thread)
end

function init(args)
	ok, denied, other = 0, 0, 0
end

function response(status, headers, body)
	if status == 200 then
		ok = ok + 1
	elseif status == 429 then
		denied = denied + 1
	else
		other = other + 1
	end
end

function done(summary, latency, requests)
	local o, d, x = 0, 0, 0
	for _, t in ipairs(threads) do
		o = o + t:get("ok")
		d = d + t:get("denied")
		x = x + t:get("other")
	end
	io.write(string.format("statuses 200=%d 429=%d other=%d\n", o, d, x))
end
