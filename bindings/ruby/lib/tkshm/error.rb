# frozen_string_literal: true

module Tkshm
  # A library call failed.  #code is the library's negative code (one of
  # the constants Tkshm::EINVAL, Tkshm::EKEYLONG, ...), #name that
  # constant's name ("EKEYLONG"); the message says what was wrong.
  class Error < StandardError
    attr_reader :code, :name
  end
end
