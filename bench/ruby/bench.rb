# frozen_string_literal: true

# One case of the Ruby benchmark: `procs` processes (fork) check keys
# "k#{rand(1..keys)}" in a loop for `seconds`, and one JSON line with the
# totals goes to stdout.
#
#   ruby bench.rb --mode M --keys N [--seconds S] [--procs P] [--redis-port PORT]
#
# Modes:
#   tkshm          Tkshm::Table#check on gcra:limit=10,periodMs=1000,burst=100
#                  (a file table in /dev/shm, 262144 slots)
#   attack_memory  what one Rack::Attack throttle (limit 100, period 3600 s)
#                  does per request, Rack::Attack.cache.count(key, period),
#                  over ActiveSupport::Cache::MemoryStore: each process
#                  counts in its own memory, as each Puma worker does
#   attack_redis   the same over redis-server (the redis gem, Rack::Attack's
#                  RedisProxy: INCRBY and EXPIRE pipelined), a connection
#                  per process
#   attack_tkshm   the same over Tkshm::RackAttackStore (262144 slots)
#   loop           the loop and the key alone
#
# With many keys, the parent first checks every key once for tkshm,
# attack_tkshm (the tables are shared) and attack_memory (its store is
# copied into each child by fork), so that the timed loops measure warm
# state; Redis creates a key with the same INCRBY as it counts one, so it
# is not warmed.  With one key nothing is warmed and the line carries how
# many checks were admitted beside what the policy admits over the run:
# GCRA 100 + floor(E / 100 ms) (E from the first check to the last), a
# throttle 100 per epoch-aligned hour it spans.
require "json"
require "rack/attack"
require "tkshm"

BATCH = 256
THROTTLE_LIMIT = 100
THROTTLE_PERIOD = 3600

def options(argv)
  o = { "mode" => nil, "keys" => nil, "seconds" => "3", "procs" => "2", "redis-port" => nil }
  argv.each_slice(2) do |name, value|
    key = name.to_s.delete_prefix("--")
    abort "bench.rb: bad argument #{name.inspect}" unless o.key?(key) && value
    o[key] = value
  end
  modes = %w[tkshm attack_memory attack_redis attack_tkshm loop]
  abort "usage: bench.rb --mode #{modes.join('|')} --keys N [--seconds S] [--procs P] [--redis-port PORT]" \
    unless modes.include?(o["mode"]) && o["keys"].to_i >= 1
  abort "bench.rb: attack_redis needs --redis-port" if o["mode"] == "attack_redis" && !o["redis-port"]
  { mode: o["mode"], keys: o["keys"].to_i, seconds: o["seconds"].to_f, procs: o["procs"].to_i,
    redis_port: o["redis-port"]&.to_i }
end

def attack_cache(store)
  cache = Rack::Attack::Cache.new
  cache.store = store
  cache
end

# The check of a mode, made in the process that uses it: a lambda of the
# key returning true when admitted.
def checker(opt, name)
  case opt[:mode]
  when "tkshm"
    table = Tkshm::Table.shared(name, "gcra:limit=10,periodMs=1000,burst=100", slots: 262_144)
    ->(k) { table.check(k).allowed }
  when "attack_memory"
    require "active_support"
    require "active_support/cache"
    cache = attack_cache(ActiveSupport::Cache::MemoryStore.new(size: 256 * 1024 * 1024))
    ->(k) { cache.count(k, THROTTLE_PERIOD) <= THROTTLE_LIMIT }
  when "attack_redis"
    require "redis"
    cache = attack_cache(Redis.new(host: "127.0.0.1", port: opt[:redis_port]))
    ->(k) { cache.count(k, THROTTLE_PERIOD) <= THROTTLE_LIMIT }
  when "attack_tkshm"
    require "tkshm/rack_attack_store"
    cache = attack_cache(Tkshm::RackAttackStore.new(prefix: name, slots: 262_144))
    ->(k) { cache.count(k, THROTTLE_PERIOD) <= THROTTLE_LIMIT }
  else
    ->(_k) { true }
  end
end

def cpu_seconds
  t = Process.times
  t.utime + t.stime
end

# A child's loop: from `start` (epoch s) for `seconds`.
def run_loop(check, keys, start, seconds)
  sleep([start - Time.now.to_f, 0].max)
  cpu0 = cpu_seconds
  first = Time.now.to_f
  deadline = first + seconds
  checks = allowed = 0
  loop do
    BATCH.times do
      allowed += 1 if check.call("k#{rand(1..keys)}")
    end
    checks += BATCH
    break if Time.now.to_f >= deadline
  end
  { checks: checks, allowed: allowed, first: first, last: Time.now.to_f, cpu_s: cpu_seconds - cpu0 }
end

def policy_admits(opt, first, last)
  return nil unless opt[:keys] == 1

  case opt[:mode]
  when "tkshm" then 100 + ((last - first) * 1000 / 100).floor
  when "loop" then nil
  else THROTTLE_LIMIT * ((last.to_i / THROTTLE_PERIOD) - (first.to_i / THROTTLE_PERIOD) + 1)
  end
end

opt = options(ARGV)
name = "tkshm-bench-rb-#{Process.pid}"
begin
  check = opt[:mode] == "attack_redis" ? nil : checker(opt, name)
  if opt[:keys] > 1 && %w[tkshm attack_tkshm attack_memory].include?(opt[:mode])
    (1..opt[:keys]).each { |i| check.call("k#{i}") }
  end
  start = Time.now.to_f + 0.2
  children = Array.new(opt[:procs]) do
    r, w = IO.pipe
    pid = fork do
      r.close
      mine = check || checker(opt, name)
      w.write(JSON.generate(run_loop(mine, opt[:keys], start, opt[:seconds])))
      exit!(0)
    end
    w.close
    [pid, r]
  end
  results = children.map do |pid, r|
    out = r.read
    Process.wait(pid)
    abort "bench.rb: a process failed" unless $?.success? && !out.empty?
    JSON.parse(out, symbolize_names: true)
  end
  first = results.map { |x| x[:first] }.min
  last = results.map { |x| x[:last] }.max
  checks = results.sum { |x| x[:checks] }
  puts JSON.generate(
    suite: "ruby", record: "case", mode: opt[:mode], keys: opt[:keys], procs: opt[:procs],
    seconds: opt[:seconds], checks: checks, checks_per_sec: checks / (last - first),
    allowed: results.sum { |x| x[:allowed] }, wall_s: last - first,
    policy_admits: policy_admits(opt, first, last), cpu_s: results.sum { |x| x[:cpu_s] }
  )
ensure
  Dir.glob("/dev/shm/#{name}*").each { |f| File.delete(f) }
end
