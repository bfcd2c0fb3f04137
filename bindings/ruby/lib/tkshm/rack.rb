# frozen_string_literal: true

require "digest"
require "tkshm"

module Tkshm
  # Rack middleware: limits per path, checked on tables every worker of
  # the host shares (Puma's cluster mode, Unicorn).
  #
  #   use Tkshm::Rack::Limiter, limits: [
  #     { name: "api", path: "/api", policy: "gcra:limit=20,periodMs=1000,burst=10" },
  #     { name: "api-hour", path: "/api", policy: "fixedWindow:limit=1000,windowMs=3600000",
  #       key: Tkshm::Rack.header("X-Api-Key") },
  #     { name: "upload", path: %r{\A/upload}, policy: "tokenBucket:capacity=100,refillPerSec=10",
  #       cost: ->(env) { [env["CONTENT_LENGTH"].to_i / 100_000, 1].max } },
  #   ], headers: "draft", status: 429
  module Rack
    # The client's address as a key: IPv4 as is, IPv6 as its /v6_prefix
    # network ("2001:db8::/64"), from REMOTE_ADDR (the peer: behind a
    # proxy, set it from the proxy's header first, as a trusted-proxy
    # middleware does).  A REMOTE_ADDR that is not an address (a server
    # on a unix socket may set anything) is the key as it is.
    def self.client_ip(v6_prefix: 64)
      Tkshm.client_key("::1", v6_prefix) # a bad prefix fails here, once
      lambda do |env|
        addr = env["REMOTE_ADDR"] or return nil
        begin
          Tkshm.client_key(addr, v6_prefix)
        rescue Tkshm::Error
          addr
        end
      end
    end

    # A request header's value as the key ("X-Api-Key"); a request without
    # it is not limited by this limit.
    def self.header(name)
      var = "HTTP_#{name.upcase.tr('-', '_')}"
      ->(env) { env[var] }
    end

    # The key as a table takes it, whatever the client sent: a header's
    # value must not skip the limit by being refused.  An empty key is one
    # shared bucket; a key longer than LEASE_KEY_MAX (the shortest any
    # table takes) becomes a digest of itself.
    def self.fit_key(key)
      key = key.to_s.b
      return "\0empty" if key.empty?
      return "\0sha256:#{Digest::SHA256.digest(key)}" if key.bytesize > LEASE_KEY_MAX

      key
    end

    # One limit: a table (its policy), which requests it applies to, and
    # their key and cost.
    class Limit
      attr_reader :name, :window_s

      def initialize(name:, policy:, path: nil, key: nil, cost: 1, table: nil,
                     slots: 0, redis: nil)
        raise ArgumentError, "limit name must be printable ASCII" unless name.to_s.match?(/\A[ -~]+\z/)

        @name = name.to_s.freeze
        @policy = policy
        @path = path
        @key = key || Rack.client_ip
        @cost = cost
        check_cost(cost) unless cost.respond_to?(:call)
        @table_path = (table || "tkshm-rack-#{@name.gsub(/[^A-Za-z0-9_.-]/, '_')}").to_s
        @slots = slots
        @redis = redis
        @window_s = window_of(policy)
        self.table # opened now: a bad policy fails at startup, not per request
      end

      def applies_to?(env)
        case @path
        when nil then true
        when Regexp then @path.match?(env["PATH_INFO"].to_s)
        else path_under?(env["PATH_INFO"].to_s, @path.to_s)
        end
      end

      # The key and the cost of `env` under this limit; nil: not limited.
      def key_and_cost(env)
        key = @key.call(env)
        return nil if key.nil?

        cost = @cost.respond_to?(:call) ? check_cost(@cost.call(env)) : @cost
        return nil if cost.zero?

        [Rack.fit_key(key), cost]
      end

      # Opened with the middleware (in a preloading master, whose workers
      # inherit the handle) and again only if closed; one handle per path
      # per process (Table.shared).
      def table
        @table = nil if @table&.closed?
        @table ||= Table.shared(@table_path, @policy, slots: @slots, redis: @redis)
      end

      private

      # "/api" covers /api and /api/..., not /apix.
      def path_under?(path, prefix)
        path == prefix || path.start_with?(prefix.end_with?("/") ? prefix : "#{prefix}/")
      end

      def check_cost(cost)
        unless cost.is_a?(Numeric) && cost.finite? && cost >= 0
          raise ArgumentError, "cost must be a finite number >= 0, not #{cost.inspect}"
        end

        cost
      end

      # The draft's w= parameter: a window's length in whole seconds.
      def window_of(policy)
        ms = policy.to_s[/\A(?:fixedWindow|slidingWindow|slidingWindowLog):.*\bwindowMs=(\d+)/, 1]
        ms && (ms.to_i % 1000).zero? ? ms.to_i / 1000 : nil
      end
    end

    # The middleware.  The limits whose paths cover the request are
    # decided together, at one instant, as one decision
    # (Tkshm.check_multi, mode "all"): admitted only if every one admits,
    # and a denial consumes nothing from any of them.  A denial answers
    # `status` with the headers of the limit that denied (the longest
    # wait) and Retry-After; an admitted response carries the headers of
    # the limit with the fewest units left.  A table error (full, busy)
    # admits unless fail_open: false, which answers 503.
    class Limiter
      def initialize(app, limits:, headers: "draft", status: 429, fail_open: true)
        raise ArgumentError, "headers must be \"draft\", \"legacy\" or \"none\"" \
          unless HEADER_STYLES.key?(headers.to_s)
        raise ArgumentError, "status must be 400 to 599" unless (400..599).cover?(status)
        raise ArgumentError, "at most #{MULTI_MAX} limits" if limits.size > MULTI_MAX

        @app = app
        @limits = limits.map { |l| l.is_a?(Limit) ? l : Limit.new(**l) }.freeze
        @style = headers.to_s
        @status = status
        @fail_open = fail_open
      end

      def call(env)
        limits = []
        dims = []
        @limits.each do |limit|
          next unless limit.applies_to?(env)

          kc = limit.key_and_cost(env) or next
          limits << limit
          dims << [limit.table, *kc]
        end
        return @app.call(env) if dims.empty?

        now = Tkshm.now_ms
        result = decide(dims, now)
        return result if result.is_a?(Array) # fail-closed's answer
        return @app.call(env) if result.nil? # failed open

        limit = limits[result.binding]
        return denied(limit, result.decision, now) unless result.allowed?

        status, headers, body = @app.call(env)
        [status, headers.merge(rate_headers(limit, result.decision, now)), body]
      end

      private

      # The MultiDecision; when the check fails, nil (fail open) or the
      # 503 response.
      def decide(dims, now)
        Tkshm.check_multi(dims, now_ms: now)
      rescue Tkshm::Error
        @fail_open ? nil : unavailable
      end

      def rate_headers(limit, decision, now)
        Tkshm.headers(decision, limit.name, style: @style,
                                            window_s: limit.window_s, now_ms: now)
             .transform_keys(&:downcase)
      end

      def denied(limit, decision, now)
        headers = rate_headers(limit, decision, now)
        headers["content-type"] = "text/plain"
        [@status, headers, ["Too Many Requests\n"]]
      end

      def unavailable
        [503, { "content-type" => "text/plain" }, ["Service Unavailable\n"]]
      end
    end
  end
end
