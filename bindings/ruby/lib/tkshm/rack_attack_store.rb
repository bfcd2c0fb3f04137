# frozen_string_literal: true

require "tkshm"
require "tkshm/rack"

module Tkshm
  # A cache store for Rack::Attack whose counts are exact across the
  # worker processes of a host:
  #
  #   Rack::Attack.cache.store = Tkshm::RackAttackStore.new
  #
  # The application's Rack::Attack.throttle rules stay as they are.
  # Rack::Attack counts a throttle with increment(key, 1, expires_in:),
  # its key naming the period's epoch-aligned window
  # ("rack::attack:<now / period>:<rule>:<discriminator>"), and throttles
  # when the count passes the limit.  Over a per-process memory store each
  # worker counts alone (4 workers admit 4 times the limit); here every
  # increment is one atomic check of a shared fixed-window table of that
  # period, whose windows are epoch-aligned as Rack::Attack's are, so the
  # count is the host's.
  #
  # read/write/delete serve Fail2Ban and Allow2Ban's bans: write(key, 1,
  # expires_in:) blocks key in a shared table until then; read(key) is 1
  # while it is blocked, else nil.  delete_matched (Rack::Attack.reset!)
  # is not supported.
  #
  # A count the store cannot keep (a Tkshm::Error: above all a period's
  # table full of live clients, which a fixed-window table does not evict,
  # as during an attack from more addresses than it has slots) fails open
  # by default, as Rails' cache stores do when their server fails: the
  # increment counts 1 and read finds no ban, so the request goes on and
  # the application stays up.  fail_open: false throttles instead (the
  # increment answers a count above any limit, read finds a ban); each
  # failure is counted in #failures.  Size the tables with slots: for the
  # clients one period sees.
  class RackAttackStore
    # Counts are the table's limit minus what is left: a limit no count
    # reaches, small enough that a cost of 1 still changes the state.
    COUNT_LIMIT = 1_000_000_000_000

    # prefix: the tables' names, "<prefix>-p<period>" and "<prefix>-bans"
    # (files in /dev/shm, or under a directory in prefix), one per period
    # a rule uses.  Use one prefix per application on a host.
    def initialize(prefix: "tkshm-rack-attack", slots: 0, fail_open: true)
      @prefix = prefix.to_s
      @slots = slots
      @fail_open = fail_open
      @failures = 0
      @tables = {}
    end

    # Counts (and increments) that failed, in this process.
    attr_reader :failures

    # Adds amount to key's count in its window and returns the count.
    def increment(key, amount = 1, expires_in: nil, **_options)
      raise ArgumentError, "expires_in is required" if expires_in.nil?

      window, period = window_of(key, expires_in.to_i)
      table = counter_table(period) # a bad policy or path raises, always
      now = Tkshm.now_ms.clamp(window * period * 1000.0,
                               (window + 1) * period * 1000.0 - 1)
      COUNT_LIMIT - table.check(Rack.fit_key(key), amount, now).remaining
    rescue Tkshm::Error
      raise unless table

      failed(1, COUNT_LIMIT)
    end

    # 1 while key is banned (written), else nil.
    def read(key, **_options)
      table = bans
      table.peek(Rack.fit_key(key)).allowed ? nil : 1
    rescue Tkshm::Error
      raise unless table

      failed(nil, 1)
    end

    # Bans key for expires_in seconds (the value is not kept: read gives 1).
    def write(key, value, expires_in: nil, **_options)
      raise ArgumentError, "expires_in is required" if expires_in.nil?
      return delete(key) unless value

      now = Tkshm.now_ms
      bans.block(Rack.fit_key(key), now + expires_in.to_f * 1000, now)
      true
    end

    # Forgets key: its ban, or its count in every period's table.
    def delete(key, **_options)
      k = Rack.fit_key(key)
      bans.reset(k)
      base = @prefix.include?("/") ? @prefix : File.join(DEFAULT_DIR, @prefix)
      Dir.glob("#{base}-p*").each do |path|
        period = path[/-p(\d+)\z/, 1] or next
        counter_table(period.to_i).reset(k)
      end
      true
    end

    private

    # A count the store could not keep: the fail-open or fail-closed
    # answer.
    def failed(open_answer, closed_answer)
      @failures += 1
      @fail_open ? open_answer : closed_answer
    end

    # Rack::Attack's key holds its window's number n = now / period and
    # expires_in = period - now % period + 1, so (n + 1) * period =
    # now + expires_in - 1 for the second `now` it read, which is this
    # one or a moment earlier: the period is the one that fits.
    def window_of(key, expires_in)
      segment = key.to_s.split(":").find { |s| s.match?(/\A\d+\z/) }
      raise ArgumentError, "not a Rack::Attack throttle key: #{key.inspect}" unless segment

      window = segment.to_i
      now = Time.now.to_i
      now.downto(now - 2) do |t|
        ends = t + expires_in - 1
        next unless (ends % (window + 1)).zero?

        period = ends / (window + 1)
        return [window, period] if period.positive? && t / period == window
      end
      raise ArgumentError, "no period fits #{key.inspect} with expires_in #{expires_in}"
    end

    def counter_table(period)
      @tables[period] ||= Table.shared(
        "#{@prefix}-p#{period}",
        "fixedWindow:limit=#{COUNT_LIMIT},windowMs=#{period * 1000}", slots: @slots
      )
    end

    # A GCRA that admits one at a time: a blocked key is denied until its
    # ban ends, an untouched one admitted (peek consumes nothing).
    def bans
      @bans ||= Table.shared("#{@prefix}-bans", "gcra:limit=1,periodMs=1000,burst=1",
                             slots: @slots)
    end
  end
end
