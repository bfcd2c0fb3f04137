# frozen_string_literal: true

# tkshm: a rate limiter whose state lives in shared memory, exact across
# the worker processes of one host (Puma's cluster mode, Unicorn).
#
#   Tkshm::Table.open("api", "gcra:limit=20,periodMs=1000,burst=10") do |t|
#     d = t.check("client:1")
#     d.allowed?                      # d is frozen
#     Tkshm.headers(d, "api")         # {"RateLimit-Policy" => ..., ...}
#   end
require "tkshm/version"
require "tkshm/tkshm"
require "tkshm/error"
require "tkshm/decision"
require "tkshm/table"
require "tkshm/redis"

module Tkshm
  # What check_multi decided: the binding decision (the one whose answer
  # stands), its index among the dimensions, and each dimension's.
  MultiDecision = Struct.new(:decision, :binding, :decisions) do
    def allowed?
      decision.allowed
    end
  end

  # Decides several tables' keys at one instant as one decision:
  # dimensions are [table, key] or [table, key, cost] (1 to MULTI_MAX).
  # mode "all": admitted only if every dimension admits, and nothing is
  # consumed anywhere otherwise; the binding decision is the denier with
  # the longest retry-after, or if all admit the one with the fewest
  # units left.  mode "any": admitted if one admits, consuming only where
  # admitted.  Returns a frozen MultiDecision.
  def self.check_multi(dimensions, mode: "all", now_ms: nil)
    raise ArgumentError, "mode must be \"all\" or \"any\", not #{mode.inspect}" \
      unless %w[all any].include?(mode.to_s)

    dims = dimensions.map do |table, key, cost = 1|
      [table, key.is_a?(String) ? key : key.to_str, cost]
    end
    decision, binding, decisions = _check_multi(dims, mode.to_s == "all", now_ms)
    MultiDecision.new(decision, binding, decisions.freeze).freeze
  end

  # The three header styles every binding names the same way
  # (docs/http-headers.md), as tkshm_http_style numbers them.
  HEADER_STYLES = { "draft" => 0, "legacy" => 1, "none" => 2 }.freeze

  # The response headers for `decision`, as a Hash of name => value.
  #
  # style "draft" (the default): the IETF draft's structured fields
  #   RateLimit-Policy: "<name>";q=<limit>[;w=<window_s>]
  #   RateLimit: "<name>";r=<remaining>;t=<seconds to reset>
  # "legacy": RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset;
  # "none": no RateLimit headers.  A denial adds Retry-After (whole
  # seconds, at least 1).  policy_name defaults to "default" (printable
  # ASCII); now_ms must be the clock the check used (default: now).
  def self.headers(decision, policy_name = nil, style: "draft",
                   window_s: nil, now_ms: nil)
    code = HEADER_STYLES.fetch(style.to_s) do
      raise ArgumentError, "style must be \"draft\", \"legacy\" or \"none\", " \
                           "not #{style.inspect}"
    end
    http_headers(decision, code, policy_name, window_s, now_ms || self.now_ms).to_h
  end
end
