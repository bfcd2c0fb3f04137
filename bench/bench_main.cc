// bench_main.cc - main of tkshm_bench_check: registers every case of
// bench_check.cc, bench_hashed.cc, bench_algos.cc and bench_multi.cc (in
// that order, which is the order of the output) and runs Google Benchmark.
//
// Cases are registered at run time rather than with BENCHMARK() so that one
// flag of ours can set every case's MinTime: a per-case MinTime overrides
// --benchmark_min_time, and bench/run.sh --quick needs short runs.
//
//   --tkshm_min_time=SECONDS   seconds each case runs per repetition
//                              (default 0.5)
// Every other flag is Google Benchmark's (--benchmark_filter, ...).

#include "bench_common.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

int
main(int argc, char **argv)
{
	static const char kMinTime[] = "--tkshm_min_time=";
	tkbench::Config cfg;
	int kept = 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (std::strncmp(a, kMinTime, sizeof kMinTime - 1) == 0) {
			char *end;
			double v = std::strtod(a + sizeof kMinTime - 1, &end);
			if (*end != '\0' || !(v > 0 && v < 3600)) {
				std::fprintf(stderr,
					     "tkshm_bench_check: bad %s\n", a);
				return 2;
			}
			cfg.min_time_s = v;
			continue;
		}
		if (std::strcmp(a, "--help") == 0)
			std::printf("tkshm_bench_check [--tkshm_min_time="
				    "SECONDS] [Google Benchmark flags]\n\n");
		argv[kept++] = argv[i];
	}
	argc = kept;
	argv[argc] = nullptr;

	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 1;
	tkbench::register_check_cases(cfg);
	tkbench::register_hashed_cases(cfg);
	tkbench::register_algo_cases(cfg);
	tkbench::register_multi_cases(cfg);
	tkbench::register_shaper_cases(cfg);
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return 0;
}
