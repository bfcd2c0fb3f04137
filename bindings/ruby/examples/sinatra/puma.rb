# frozen_string_literal: true

# Puma in cluster mode: 4 workers forked from a master that loaded the
# application (and opened its tables) once.
bind "tcp://127.0.0.1:#{ENV.fetch('PORT', '9292')}"
workers 4
threads 1, 4
preload_app!
