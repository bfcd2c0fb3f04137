# frozen_string_literal: true

module Tkshm
  # The gem's version: the C library's (include/tkshm.h), which
  # test_table.rb compares with Tkshm::LIBRARY_VERSION.
  VERSION = "0.1.0"
end
