# frozen_string_literal: true

# A Sinatra application limited by tkshm across Puma's workers:
#   /api/...   20 requests a second per client (burst 10) and 1000 an hour
#              per API key, by the middleware;
#   /login     5 attempts a minute per client, checked in the route.
#
#   puma -C puma.rb config.ru          (4 workers; PORT, default 9292)
require "sinatra/base"
require "tkshm"
require "tkshm/rack"

class ExampleApp < Sinatra::Base
  PREFIX = ENV.fetch("TKSHM_EXAMPLE_TABLES", "tkshm-sinatra-example")

  use Tkshm::Rack::Limiter, headers: "draft", limits: [
    { name: "api", path: "/api", table: "#{PREFIX}-api",
      policy: "gcra:limit=20,periodMs=1000,burst=10" },
    { name: "api-hour", path: "/api", table: "#{PREFIX}-api-hour",
      policy: "fixedWindow:limit=1000,windowMs=3600000",
      key: Tkshm::Rack.header("X-Api-Key") }
  ]

  # Opened once per process (the workers inherit it from Puma's master).
  LOGINS = Tkshm::Table.shared("#{PREFIX}-login", "fixedWindow:limit=5,windowMs=60000")

  get "/api/hello" do
    content_type :text
    "hello from worker #{Process.pid}\n"
  end

  post "/login" do
    d = LOGINS.check(Tkshm.client_key(request.ip))
    headers Tkshm.headers(d, "login", window_s: 60)
    halt 429, "too many attempts\n" unless d.allowed?
    "checked #{params['user']}\n"
  end
end
