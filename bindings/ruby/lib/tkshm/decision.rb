# frozen_string_literal: true

module Tkshm
  # The result of a check or peek, frozen: allowed, limit (GCRA: the
  # burst), remaining (whole units), reset_at (epoch ms of full
  # replenishment), retry_after_ms (0 when allowed), flags (DECISION_*).
  # Only a Table makes one.
  class Decision
    class << self
      undef_method :new, :[]
    end

    def allowed?
      allowed
    end

    def denied?
      !allowed
    end
  end
end
