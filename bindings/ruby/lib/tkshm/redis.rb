# frozen_string_literal: true

module Tkshm
  # The connection of strict tables (a policy with ";mode=strict"), which
  # decide every check on Redis.  It connects on first use, in the process
  # that uses it: a worker forked after it was made opens its own socket.
  #
  #   Tkshm::Redis.new(host: "10.0.0.5", port: 6379)
  #   Tkshm::Redis.new(cluster: ["10.0.0.5:7000", "10.0.0.6:7000"])
  #   Tkshm::Redis.new(sentinels: "10.0.0.5:26379", sentinel_master: "main")
  #
  # Options, all optional: host ("127.0.0.1"), port (6379), unix_path,
  # username, password, db, cluster, sentinels (a "host:port,..." String
  # or an Array), sentinel_master, connect_timeout_ms (200),
  # command_timeout_ms (100), breaker_failures (3), breaker_open_ms (1000),
  # server_time (true).  A bad value raises Tkshm::Error EINVAL; without
  # the library's Redis tier, ENOTSUP.
  class Redis
    OPTIONS = %i[host port unix_path username password db cluster sentinels
                 sentinel_master connect_timeout_ms command_timeout_ms
                 breaker_failures breaker_open_ms server_time].freeze

    def initialize(**options)
      unknown = options.keys - OPTIONS
      raise ArgumentError, "unknown Tkshm::Redis option #{unknown.first.inspect}" \
        unless unknown.empty?

      %i[cluster sentinels].each do |k|
        options[k] = options[k].join(",") if options[k].is_a?(Array)
      end
      _configure(options)
    end
  end
end
