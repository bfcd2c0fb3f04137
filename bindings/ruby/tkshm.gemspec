# frozen_string_literal: true

# gem build tkshm.gemspec, then gem install ./tkshm-0.1.0.gem: the C
# extension is compiled against an installed libtkshm (pkg-config), or
# from a checkout's sources (-- --with-tkshm-source=DIR); README.md.
require_relative "lib/tkshm/version"

Gem::Specification.new do |s|
  s.name = "tkshm"
  s.version = Tkshm::VERSION
  s.summary = "Shared-memory rate limiter, exact across Puma and Unicorn workers"
  s.description = "tkshm's C library for Ruby: tables in shared memory that " \
                  "every worker of a host checks, Rack middleware and a " \
                  "Rack::Attack cache store."
  s.authors = ["tkshm developers"]
  s.required_ruby_version = ">= 3.0"
  s.files = Dir.chdir(__dir__) do
    Dir["lib/**/*.rb", "ext/tkshm/*.{c,h,rb}", "README.md"]
  end
  s.extensions = ["ext/tkshm/extconf.rb"]
  s.require_paths = ["lib"]
end
