#!/usr/bin/env bash
# Builds tkshm (Release) and runs the demo.  Extra arguments go to the demo.
#
#   scripts/demo.sh [demo args...]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh demo

cmake -S . -B build \
	-DCMAKE_BUILD_TYPE=Release \
	-DTKSHM_BUILD_TESTS=OFF \
	-DTKSHM_BUILD_TOOLS=ON \
	-DTKSHM_BUILD_BENCH=OFF \
	-DTKSHM_BUILD_DEMO=ON
cmake --build build -j2

demo=build/examples/tkshm-demo
if [[ ! -x $demo ]]; then
	echo "demo.sh: error: $demo was not built (is examples/CMakeLists.txt" \
		"there, defining the tkshm-demo target?)" >&2
	exit 1
fi

exec "$demo" "$@"
