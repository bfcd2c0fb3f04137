# frozen_string_literal: true

module Tkshm
  # A shared table: a file ("name" is /dev/shm/name, or a path), or
  # anonymous (path nil: shared with the processes this one forks
  # afterwards, so make it in the master, before the workers fork).
  #
  # Opening a table that exists applies `policy` (and a larger `slots`) to
  # it for every process attached, as tkshm_open does; #change says what
  # was done.  keep: true refuses a difference (EMISMATCH) instead.
  # A handle survives fork: a worker may use the one its master opened.
  class Table
    attr_reader :path

    # slots: 0 is 65536 to create, the table's own to attach; mode: the
    # permission bits of a file this call creates; create: false only
    # attaches (ENOENT if absent); redis: a Tkshm::Redis to attach (a strict
    # table, "...;mode=strict").
    def initialize(path, policy = nil, slots: 0, mode: 0o600, create: true,
                   keep: false, redis: nil)
      path = path.to_path if path.respond_to?(:to_path)
      @path = path&.to_s&.freeze
      _open(@path, policy, slots, mode, create, keep)
      attach(redis) if redis
    rescue StandardError
      close
      raise
    end

    # Table.open(...) { |t| ... } closes the table when the block ends and
    # returns the block's value; without a block it is Table.new.
    def self.open(*args, **kwargs)
      table = new(*args, **kwargs)
      return table unless block_given?

      begin
        yield table
      ensure
        table.close
      end
    end

    @shared = {}
    @shared_lock = Mutex.new

    class << self
      # This process's one handle of the table at `path`: opened on the
      # first call, the same object afterwards (in a forked worker too,
      # whose inherited handle stays valid).  A call with other arguments
      # opens the path again, which applies them to the table.
      def shared(path, policy = nil, **kwargs)
        raise ArgumentError, "a shared table needs a path (an anonymous " \
                             "table is made once, before fork)" if path.nil?

        key = [path.to_s, policy, kwargs].freeze
        @shared_lock.synchronize do
          table = @shared[key]
          table = @shared[key] = new(path, policy, **kwargs) if table.nil? || table.closed?
          table
        end
      end

      # How many tables Table.shared holds open in this process.
      def shared_count
        @shared_lock.synchronize { @shared.count { |_, t| !t.closed? } }
      end
    end

    def inspect
      return "#<Tkshm::Table #{path || '(anonymous)'} closed>" if closed?

      "#<Tkshm::Table #{path || '(anonymous)'} #{policy}>"
    end
  end
end
