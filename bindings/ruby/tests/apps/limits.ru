# frozen_string_literal: true

# The application the server tests run under Puma and Unicorn, configured
# by the environment the test gives the server:
#   TKSHM_TEST_MODE   limiter (Tkshm::Rack::Limiter), attack-memory or
#                     attack-tkshm (one Rack::Attack throttle over
#                     ActiveSupport's MemoryStore or Tkshm::RackAttackStore)
#   TKSHM_TEST_TABLE  the tkshm tables' name
#   TKSHM_TEST_LIMIT  requests admitted per hour
#   TKSHM_TEST_DIR    where /slow writes its worker's pid
# Every response names the worker that served it (x-worker).
require "tkshm"
require "tkshm/rack"

limit = Integer(ENV.fetch("TKSHM_TEST_LIMIT"))
name = ENV.fetch("TKSHM_TEST_TABLE")
dir = ENV.fetch("TKSHM_TEST_DIR")

app = lambda do |env|
  if env["PATH_INFO"] == "/slow"
    # Admitted and still being served: the test kills this worker now.
    File.write(File.join(dir, "slow.pid.tmp"), Process.pid.to_s)
    File.rename(File.join(dir, "slow.pid.tmp"), File.join(dir, "slow.pid"))
    sleep 60
  elsif env["PATH_INFO"] == "/busy"
    sleep 0.03 # keeps a worker busy, so the others take requests too
  end
  [200, { "content-type" => "text/plain", "x-worker" => Process.pid.to_s }, ["ok\n"]]
end

# Answers that name their worker, the denials too.
tag_worker = lambda do |inner|
  lambda do |env|
    status, headers, body = inner.call(env)
    [status, headers.merge("x-worker" => Process.pid.to_s), body]
  end
end

case ENV.fetch("TKSHM_TEST_MODE")
when "limiter"
  run tag_worker.call(Tkshm::Rack::Limiter.new(app, limits: [
    { name: "all", table: name, policy: "fixedWindow:limit=#{limit},windowMs=3600000" }
  ]))
when "attack-memory", "attack-tkshm"
  require "rack/attack"
  if ENV["TKSHM_TEST_MODE"] == "attack-memory"
    require "active_support"
    require "active_support/cache"
    Rack::Attack.cache.store = ActiveSupport::Cache::MemoryStore.new
  else
    require "tkshm/rack_attack_store"
    Rack::Attack.cache.store = Tkshm::RackAttackStore.new(prefix: name)
  end
  Rack::Attack.throttle("all", limit: limit, period: 3600) { |_req| "everyone" }
  run tag_worker.call(Rack::Attack.new(app))
else
  raise "unknown TKSHM_TEST_MODE"
end
