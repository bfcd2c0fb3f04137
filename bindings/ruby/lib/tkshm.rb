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
