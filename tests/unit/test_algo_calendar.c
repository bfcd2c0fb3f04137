/*
 * test_algo_calendar.c - civil-date arithmetic and quota periods
 * (src/algorithms/calendar.h).
 *
 * Oracles: the C library's proleptic-Gregorian UTC calendar (timegm,
 * gmtime_r), Python's datetime for a few fixed day numbers, the leap-year
 * rule itself, and, for the periods, a model that finds local midnights,
 * weekdays and month starts with gmtime_r/timegm instead of Hinnant's
 * formulas, then applies ThrottleKit's final double operations
 * (docs/semantics.md, "Calendar periods").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "algo_testing.h"
#include "algorithms/calendar.h"

/* ------------------------------------------------------------------------
 * The C library's calendar (algo_testing.h) and the leap-year rule
 * ---------------------------------------------------------------------- */

#define DAY_MS	       ALGO_DAY_MS
#define libc_days(...) algo_libc_days(__VA_ARGS__)
#define libc_civil(z)  algo_libc_civil(z)
#define utc(...)       algo_utc(__VA_ARGS__)

static bool
is_leap(int64_t y)
{
	/* Floored remainders, so that the rule holds before year 0 too. */
	int64_t r4 = ((y % 4) + 4) % 4, r100 = ((y % 100) + 100) % 100;
	int64_t r400 = ((y % 400) + 400) % 400;

	return r4 == 0 && (r100 != 0 || r400 == 0);
}

static int
month_days(int64_t y, int m)
{
	static const int len[] = { 31, 28, 31, 30, 31, 30,
				   31, 31, 30, 31, 30, 31 };

	return m == 2 && is_leap(y) ? 29 : len[m - 1];
}

/* ------------------------------------------------------------------------
 * Civil dates
 * ---------------------------------------------------------------------- */

/* Every day from 1700-01-01 to 2300-01-01 (600 years): both directions
 * agree with gmtime_r and timegm. */
static void
test_round_trip_1700_2300_vs_libc(void **state)
{
	int64_t first = libc_days(1700, 1, 1), last = libc_days(2300, 1, 1);
	int64_t n = 0;

	(void)state;
	assert_int_equal(first, -98615); /* Python's datetime */
	assert_int_equal(last, 120530);
	for (int64_t z = first; z <= last; z++) {
		struct tm tm = libc_civil(z);
		int64_t y;
		int m, d;

		tk_civil_from_days(z, &y, &m, &d);
		if (y != tm.tm_year + 1900 || m != tm.tm_mon + 1 ||
		    d != tm.tm_mday)
			fail_msg("day %lld: %lld-%02d-%02d, gmtime_r says "
				 "%d-%02d-%02d",
				 (long long)z, (long long)y, m, d,
				 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
		if (tk_days_from_civil(y, m, d) != z)
			fail_msg("days_from_civil(%lld-%02d-%02d) = %lld, want "
				 "%lld",
				 (long long)y, m, d,
				 (long long)tk_days_from_civil(y, m, d),
				 (long long)z);
		if (libc_days(y, m, d) != z)
			fail_msg("timegm disagrees at day %lld", (long long)z);
		n++;
	}
	assert_true(n > 550 * 365);
}

/* Over 6000 years around year 0 (several 400-year eras, negative ones
 * included): consecutive day numbers are consecutive dates under the
 * leap-year rule, and every date maps back to its number. */
static void
test_successor_dates_across_eras(void **state)
{
	int64_t z = tk_days_from_civil(-3000, 1, 1);
	int64_t end = tk_days_from_civil(3001, 1, 1);
	int64_t y = -3000;
	int m = 1, d = 1;

	(void)state;
	for (; z < end; z++) {
		int64_t gy;
		int gm, gd;

		tk_civil_from_days(z, &gy, &gm, &gd);
		if (gy != y || gm != m || gd != d)
			fail_msg("day %lld is %lld-%02d-%02d, want "
				 "%lld-%02d-%02d",
				 (long long)z, (long long)gy, gm, gd,
				 (long long)y, m, d);
		assert_true(tk_days_from_civil(y, m, d) == z);
		if (++d > month_days(y, m)) {
			d = 1;
			if (++m > 12) {
				m = 1;
				y++;
			}
		}
	}
	assert_true(y == 3001 && m == 1 && d == 1);
}

/* The month of a day, as the period code takes it (its first day less
 * its day of the month, plus its length), against days_from_civil of the
 * month's first and of the next month's: every day of years -3000..3000
 * (several eras, negative ones included) and the days at the clamp
 * TK_CAL_DAY_LIMIT. */
static void
check_month_of(int64_t z)
{
	int64_t y, first, next, want_first, want_next;
	int m;

	tk_civil_from_days(z, &y, &m, NULL);
	want_first = tk_days_from_civil(y, m, 1);
	want_next = m == 12 ? tk_days_from_civil(y + 1, 1, 1) :
			      tk_days_from_civil(y, m + 1, 1);
	tk_civil_month_of(z, &first, &next);
	if (first != want_first || next != want_next)
		fail_msg("day %lld: month [%lld, %lld), days_from_civil "
			 "says [%lld, %lld)",
			 (long long)z, (long long)first, (long long)next,
			 (long long)want_first, (long long)want_next);
}

static void
test_month_of_day_vs_days_from_civil(void **state)
{
	int64_t end = tk_days_from_civil(3001, 1, 1);
	int64_t limit = (int64_t)TK_CAL_DAY_LIMIT;

	(void)state;
	for (int64_t z = tk_days_from_civil(-3000, 1, 1); z < end; z++)
		check_month_of(z);
	for (int64_t z = -limit; z < -limit + 800; z++)
		check_month_of(z);
	for (int64_t z = limit - 800; z <= limit; z++)
		check_month_of(z);
}

static void
test_fixed_days(void **state)
{
	int64_t y;
	int m, d;

	(void)state;
	/* Python's datetime.date(...) - date(1970, 1, 1). */
	assert_true(tk_days_from_civil(1970, 1, 1) == 0);
	assert_true(tk_days_from_civil(1969, 12, 31) == -1);
	assert_true(tk_days_from_civil(2000, 3, 1) == 11017);
	assert_true(tk_days_from_civil(2024, 2, 29) == 19782);
	assert_true(tk_days_from_civil(1900, 3, 1) == -25508);
	assert_true(tk_days_from_civil(1, 1, 1) == -719162);
	assert_true(tk_days_from_civil(9999, 12, 31) == 2932896);
	/* Hinnant's origin: 0000-03-01 is day -719468. */
	assert_true(tk_days_from_civil(0, 3, 1) == -719468);
	tk_civil_from_days(-719468, &y, &m, &d);
	assert_true(y == 0 && m == 3 && d == 1);
	tk_civil_from_days(-719469, &y, &m, &d);
	assert_true(y == 0 && m == 2 && d == 29); /* year 0 is a leap year */
	/* The clamp's far ends still round-trip. */
	for (int s = -1; s <= 1; s += 2) {
		int64_t z = s * (int64_t)TK_CAL_DAY_LIMIT;

		tk_civil_from_days(z, &y, &m, &d);
		assert_true(tk_days_from_civil(y, m, d) == z);
	}
	tk_civil_from_days(0, NULL, NULL, NULL); /* NULL outputs are fine */
}

/* February: 29 days in 2000 (divisible by 400), 28 in 1900 and 2100
 * (centuries), 29 in 2024, 28 in 2023; the C library agrees. */
static void
test_leap_february(void **state)
{
	static const struct {
		int64_t year;
		int days;
	} cases[] = {
		{ 2000, 29 }, { 1900, 28 }, { 2100, 28 }, { 2024, 29 },
		{ 2023, 28 }, { 1600, 29 }, { 2400, 29 }, { 1700, 28 },
		{ 0, 29 },    { -4, 29 },   { -100, 28 }, { -400, 29 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t y = cases[i].year;
		int64_t n = tk_days_from_civil(y, 3, 1) -
			    tk_days_from_civil(y, 2, 1);
		int64_t y2;
		int m, d;

		if (n != cases[i].days)
			fail_msg("February %lld has %lld days, want %d",
				 (long long)y, (long long)n, cases[i].days);
		tk_civil_from_days(tk_days_from_civil(y, 3, 1) - 1, &y2, &m,
				   &d);
		assert_true(y2 == y && m == 2 && d == cases[i].days);
		if (y >= 1700 && y <= 2400)
			assert_true(libc_days(y, 3, 1) - libc_days(y, 2, 1) ==
				    cases[i].days);
	}
}

/* ------------------------------------------------------------------------
 * Periods
 * ---------------------------------------------------------------------- */

static struct tk_calendar
cal(enum tk_cadence c, double offset_minutes, double week_starts_on)
{
	struct tk_calendar k;
	char err[160] = "";

	if (tk_calendar_init(&k, "test", c, offset_minutes, week_starts_on, 0,
			     0, err, sizeof err) != TKSHM_OK)
		fail_msg("tk_calendar_init: %s", err);
	return k;
}

static struct tk_calendar
cal_fixed(double period_ms, double anchor)
{
	struct tk_calendar k;
	char err[160] = "";

	if (tk_calendar_init(&k, "test", TK_CADENCE_FIXED, 0, 1, period_ms,
			     anchor, err, sizeof err) != TKSHM_OK)
		fail_msg("tk_calendar_init(fixed): %s", err);
	return k;
}

/* The model (algo_testing.h). */
static void
model_period(enum tk_cadence c, double now, double offset_minutes, int wso,
	     double *start, double *reset)
{
	algo_model_period((int)c, now, offset_minutes, wso, 0, 0, start, reset);
}

/* What a period must be, stated without formulas: it starts and ends at a
 * local midnight, contains now, and starts on the right local date. */
static void
assert_period_shape(enum tk_cadence c, double now, double offset_minutes,
		    int wso, double start, double reset, const char *what)
{
	double off = offset_minutes * 60000;
	struct tm ls, ln, lr;
	time_t t;

	if (!(start <= now && now < reset))
		fail_msg("%s: now %.17g outside [%.17g, %.17g)", what, now,
			 start, reset);
	assert_true(fmod(start + off, DAY_MS) == 0);
	assert_true(fmod(reset + off, DAY_MS) == 0);
	t = (time_t)((start + off) / 1000);
	gmtime_r(&t, &ls);
	t = (time_t)((reset + off) / 1000);
	gmtime_r(&t, &lr);
	t = (time_t)floor((now + off) / 1000);
	gmtime_r(&t, &ln);
	switch (c) {
	case TK_CADENCE_DAY:
		assert_true(ls.tm_yday == ln.tm_yday &&
			    ls.tm_year == ln.tm_year);
		assert_true(reset - start == DAY_MS);
		break;
	case TK_CADENCE_WEEK:
		assert_int_equal(ls.tm_wday, wso);
		assert_int_equal(lr.tm_wday, wso);
		assert_true(reset - start == 7 * DAY_MS);
		break;
	default:
		assert_int_equal(ls.tm_mday, 1);
		assert_int_equal(lr.tm_mday, 1);
		assert_true(ls.tm_mon == ln.tm_mon && ls.tm_year == ln.tm_year);
		assert_int_equal(lr.tm_mon, (ln.tm_mon + 1) % 12);
		break;
	}
}

static void
check_period(const struct tk_calendar *k, enum tk_cadence c, double now,
	     double offset_minutes, int wso, const char *what)
{
	double s, r, ms, mr;

	tk_calendar_period(k, now, &s, &r);
	model_period(c, now, offset_minutes, wso, &ms, &mr);
	if (tk_f64_word(s) != tk_f64_word(ms) ||
	    tk_f64_word(r) != tk_f64_word(mr))
		fail_msg("%s (now %.17g, offset %g, weekStartsOn %d): "
			 "[%.17g, %.17g), model [%.17g, %.17g)",
			 what, now, offset_minutes, wso, s, r, ms, mr);
	assert_period_shape(c, now, offset_minutes, wso, s, r, what);
}

static const double offsets[] = { 0, 330, -840, 840, -300, 345, 1, -1 };

/* Random instants from 1970 to ~2286 (fractional ms), every offset, every
 * cadence and weekStartsOn; plus the instants at and around each
 * boundary found. */
static void
test_periods_random_vs_libc(void **state)
{
	uint64_t rs = 42;
	unsigned n = 0;

	(void)state;
	for (int i = 0; i < 2500; i++) {
		double now = algo_unit(&rs) * 1e13;

		if (i & 1)
			now = floor(now);
		for (size_t o = 0; o < sizeof offsets / sizeof offsets[0];
		     o++) {
			double off = offsets[o];
			struct tk_calendar km = cal(TK_CADENCE_MONTH, off, 1);
			struct tk_calendar kd = cal(TK_CADENCE_DAY, off, 1);
			int wso = (int)algo_below(&rs, 7);
			struct tk_calendar kw = cal(TK_CADENCE_WEEK, off, wso);
			double s, r;

			check_period(&km, TK_CADENCE_MONTH, now, off, 1,
				     "month");
			check_period(&kd, TK_CADENCE_DAY, now, off, 1, "day");
			check_period(&kw, TK_CADENCE_WEEK, now, off, wso,
				     "week");
			n += 3;
			/* The boundaries themselves. */
			tk_calendar_period(&km, now, &s, &r);
			check_period(&km, TK_CADENCE_MONTH, s, off, 1,
				     "month start");
			check_period(&km, TK_CADENCE_MONTH, r, off, 1,
				     "month reset");
			check_period(&km, TK_CADENCE_MONTH, r - 0.5, off, 1,
				     "month reset - 0.5");
			tk_calendar_period(&km, r, &s, &r);
			tk_calendar_period(&kw, now, &s, &r);
			check_period(&kw, TK_CADENCE_WEEK, s - 1, off, wso,
				     "week start - 1");
			check_period(&kw, TK_CADENCE_WEEK, r, off, wso,
				     "week reset");
			n += 5;
		}
	}
	assert_true(n > 100000);
}

struct period_case {
	enum tk_cadence c;
	double offset;
	int wso;
	double now, start, reset;
};

static void
run_cases(const struct period_case *cs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tk_calendar k = cal(cs[i].c, cs[i].offset, cs[i].wso);
		double s, r;

		tk_calendar_period(&k, cs[i].now, &s, &r);
		if (s != cs[i].start || r != cs[i].reset)
			fail_msg("case %zu: [%.17g, %.17g), want [%.17g, "
				 "%.17g)",
				 i, s, r, cs[i].start, cs[i].reset);
	}
}

/* Month boundaries: leap February, December into January, and the local
 * midnight at offsets +330 (IST), -840 and +840. */
static void
test_month_boundaries(void **state)
{
	const double ms = 1, h = 3600000.0;
	const struct period_case cases[] = {
		/* UTC, leap year: February has 29 days. */
		{ TK_CADENCE_MONTH, 0, 1, utc(2024, 3, 1, 0, 0) - ms,
		  utc(2024, 2, 1, 0, 0), utc(2024, 3, 1, 0, 0) },
		{ TK_CADENCE_MONTH, 0, 1, utc(2024, 3, 1, 0, 0),
		  utc(2024, 3, 1, 0, 0), utc(2024, 4, 1, 0, 0) },
		{ TK_CADENCE_MONTH, 0, 1, utc(2024, 2, 29, 12, 0),
		  utc(2024, 2, 1, 0, 0), utc(2024, 3, 1, 0, 0) },
		/* 2023 and 2100 are not leap years; 2000 is. */
		{ TK_CADENCE_MONTH, 0, 1, utc(2023, 2, 28, 23, 59),
		  utc(2023, 2, 1, 0, 0), utc(2023, 3, 1, 0, 0) },
		{ TK_CADENCE_MONTH, 0, 1, utc(2100, 2, 28, 23, 59),
		  utc(2100, 2, 1, 0, 0), utc(2100, 3, 1, 0, 0) },
		{ TK_CADENCE_MONTH, 0, 1, utc(2000, 2, 29, 0, 0),
		  utc(2000, 2, 1, 0, 0), utc(2000, 3, 1, 0, 0) },
		/* December rolls into the next year. */
		{ TK_CADENCE_MONTH, 0, 1, utc(2023, 12, 31, 23, 59),
		  utc(2023, 12, 1, 0, 0), utc(2024, 1, 1, 0, 0) },
		/* IST (+5:30): local midnight is 18:30 UTC the day before. */
		{ TK_CADENCE_MONTH, 330, 1, utc(2024, 2, 29, 18, 30) - ms,
		  utc(2024, 1, 31, 18, 30), utc(2024, 2, 29, 18, 30) },
		{ TK_CADENCE_MONTH, 330, 1, utc(2024, 2, 29, 18, 30),
		  utc(2024, 2, 29, 18, 30), utc(2024, 3, 31, 18, 30) },
		/* -14:00: local midnight is 14:00 UTC the same day. */
		{ TK_CADENCE_MONTH, -840, 1, utc(2024, 3, 1, 14, 0) - ms,
		  utc(2024, 2, 1, 14, 0), utc(2024, 3, 1, 14, 0) },
		{ TK_CADENCE_MONTH, -840, 1, utc(2024, 3, 1, 13, 0),
		  utc(2024, 2, 1, 14, 0), utc(2024, 3, 1, 14, 0) },
		/* +14:00: local midnight is 10:00 UTC the day before. */
		{ TK_CADENCE_MONTH, 840, 1, utc(2024, 2, 29, 10, 0) - ms,
		  utc(2024, 1, 31, 10, 0), utc(2024, 2, 29, 10, 0) },
		{ TK_CADENCE_MONTH, 840, 1, utc(2024, 2, 29, 10, 0),
		  utc(2024, 2, 29, 10, 0), utc(2024, 3, 31, 10, 0) },
		/* The first month of the epoch, at offsets either side. */
		{ TK_CADENCE_MONTH, 0, 1, 0, 0, utc(1970, 2, 1, 0, 0) },
		{ TK_CADENCE_MONTH, 840, 1, 0, -14 * h,
		  utc(1970, 2, 1, 0, 0) - 14 * h },
		{ TK_CADENCE_MONTH, -840, 1, 0, utc(1969, 12, 1, 14, 0),
		  utc(1970, 1, 1, 14, 0) },
	};

	(void)state;
	run_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Week boundaries for every weekStartsOn (2024-01-03 was a Wednesday),
 * and at an offset. */
static void
test_week_boundaries(void **state)
{
	const double wed = utc(2024, 1, 3, 12, 0);
	const struct period_case cases[] = {
		{ TK_CADENCE_WEEK, 0, 0, wed, utc(2023, 12, 31, 0, 0),
		  utc(2024, 1, 7, 0, 0) },
		{ TK_CADENCE_WEEK, 0, 1, wed, utc(2024, 1, 1, 0, 0),
		  utc(2024, 1, 8, 0, 0) },
		{ TK_CADENCE_WEEK, 0, 2, wed, utc(2024, 1, 2, 0, 0),
		  utc(2024, 1, 9, 0, 0) },
		{ TK_CADENCE_WEEK, 0, 3, wed, utc(2024, 1, 3, 0, 0),
		  utc(2024, 1, 10, 0, 0) },
		{ TK_CADENCE_WEEK, 0, 4, wed, utc(2023, 12, 28, 0, 0),
		  utc(2024, 1, 4, 0, 0) },
		{ TK_CADENCE_WEEK, 0, 5, wed, utc(2023, 12, 29, 0, 0),
		  utc(2024, 1, 5, 0, 0) },
		{ TK_CADENCE_WEEK, 0, 6, wed, utc(2023, 12, 30, 0, 0),
		  utc(2024, 1, 6, 0, 0) },
		/* Monday 00:00 UTC is already Monday 05:30 in IST. */
		{ TK_CADENCE_WEEK, 330, 1, utc(2024, 1, 1, 0, 0),
		  utc(2023, 12, 31, 18, 30), utc(2024, 1, 7, 18, 30) },
		/* ...and still Sunday 10:00 at -14:00. */
		{ TK_CADENCE_WEEK, -840, 1, utc(2024, 1, 1, 0, 0),
		  utc(2023, 12, 25, 14, 0), utc(2024, 1, 1, 14, 0) },
		{ TK_CADENCE_WEEK, 840, 1, utc(2024, 1, 7, 10, 0),
		  utc(2024, 1, 7, 10, 0), utc(2024, 1, 14, 10, 0) },
		/* 1970-01-01 was a Thursday. */
		{ TK_CADENCE_WEEK, 0, 4, 0, 0, 7 * DAY_MS },
		{ TK_CADENCE_WEEK, 0, 1, 0, -3 * DAY_MS, 4 * DAY_MS },
	};

	(void)state;
	run_cases(cases, sizeof cases / sizeof cases[0]);
}

static void
test_day_boundaries(void **state)
{
	const struct period_case cases[] = {
		{ TK_CADENCE_DAY, 0, 1, utc(2024, 2, 29, 23, 59),
		  utc(2024, 2, 29, 0, 0), utc(2024, 3, 1, 0, 0) },
		{ TK_CADENCE_DAY, 330, 1, utc(2024, 2, 29, 18, 29),
		  utc(2024, 2, 28, 18, 30), utc(2024, 2, 29, 18, 30) },
		{ TK_CADENCE_DAY, 330, 1, utc(2024, 2, 29, 18, 30),
		  utc(2024, 2, 29, 18, 30), utc(2024, 3, 1, 18, 30) },
		{ TK_CADENCE_DAY, -840, 1, utc(2024, 3, 1, 13, 59),
		  utc(2024, 2, 29, 14, 0), utc(2024, 3, 1, 14, 0) },
		{ TK_CADENCE_DAY, 840, 1, utc(2024, 3, 1, 10, 0),
		  utc(2024, 3, 1, 10, 0), utc(2024, 3, 2, 10, 0) },
	};

	(void)state;
	run_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Fixed periods: every periodMs from the anchor, before and after it. */
static void
test_fixed_periods(void **state)
{
	static const struct {
		double period, anchor, now, start, reset;
	} cases[] = {
		{ 1000, 250, 1.7e12 + 100, 1.7e12 - 750, 1.7e12 + 250 },
		{ 1000, 250, 1.7e12 + 250, 1.7e12 + 250, 1.7e12 + 1250 },
		{ 1000, 250, 1.7e12 + 249.5, 1.7e12 - 750, 1.7e12 + 250 },
		{ 300, 1000, 100, 100, 400 }, /* now before the anchor */
		{ 300, 1000, 99, -200, 100 },
		{ 60000, -7, 0, -7, 59993 },
		{ 1000, 0, 1.7e12 + 999, 1.7e12, 1.7e12 + 1000 },
		{ 0.5, 3, 10.25, 10, 10.5 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tk_calendar k =
			cal_fixed(cases[i].period, cases[i].anchor);
		double s, r;

		tk_calendar_period(&k, cases[i].now, &s, &r);
		if (s != cases[i].start || r != cases[i].reset)
			fail_msg("fixed case %zu: [%.17g, %.17g), want "
				 "[%.17g, %.17g)",
				 i, s, r, cases[i].start, cases[i].reset);
	}
}

static void
test_validation(void **state)
{
	static const struct {
		int cadence;
		double off, wso, period, anchor;
		const char *names;
	} bad[] = {
		{ TK_CADENCE_MONTH, 841, 1, 0, 0, "offsetMinutes" },
		{ TK_CADENCE_MONTH, -841, 1, 0, 0, "offsetMinutes" },
		{ TK_CADENCE_DAY, 1.5, 1, 0, 0, "offsetMinutes" },
		{ TK_CADENCE_DAY, NAN, 1, 0, 0, "offsetMinutes" },
		{ TK_CADENCE_DAY, INFINITY, 1, 0, 0, "offsetMinutes" },
		{ TK_CADENCE_WEEK, 0, 7, 0, 0, "weekStartsOn" },
		{ TK_CADENCE_WEEK, 0, -1, 0, 0, "weekStartsOn" },
		{ TK_CADENCE_WEEK, 0, 0.5, 0, 0, "weekStartsOn" },
		{ TK_CADENCE_WEEK, 0, NAN, 0, 0, "weekStartsOn" },
		/* ThrottleKit validates options a cadence does not use. */
		{ TK_CADENCE_DAY, 0, 9, 0, 0, "weekStartsOn" },
		{ TK_CADENCE_MONTH, 0, 1, 0, 0.5, "anchor" },
		{ TK_CADENCE_FIXED, 0, 1, 1000, NAN, "anchor" },
		{ TK_CADENCE_FIXED, 0, 1, 1000, INFINITY, "anchor" },
		{ TK_CADENCE_FIXED, 0, 1, 0, 0, "periodMs" },
		{ TK_CADENCE_FIXED, 0, 1, -5, 0, "periodMs" },
		{ TK_CADENCE_FIXED, 0, 1, NAN, 0, "periodMs" },
		{ TK_CADENCE_FIXED, 0, 1, INFINITY, 0, "periodMs" },
		{ TK_CADENCE_FIXED, 0, 1, 1e-310, 0, "periodMs" },
		{ TK_CADENCE_FIXED, 0, 1, 1e308, 1.7e308, "periodMs" },
		{ 0, 0, 1, 0, 0, "resetCadence" },
		{ 5, 0, 1, 1000, 0, "resetCadence" },
	};
	struct tk_calendar k;
	char err[200];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		assert_rc(tk_calendar_init(
				  &k, "quota", (enum tk_cadence)bad[i].cadence,
				  bad[i].off, bad[i].wso, bad[i].period,
				  bad[i].anchor, err, sizeof err),
			  TKSHM_EPOLICY);
		if (!strstr(err, bad[i].names) || strncmp(err, "quota:", 6))
			fail_msg("case %zu: \"%s\" does not name %s", i, err,
				 bad[i].names);
	}
	/* The edges of each range, and periodMs ignored by the calendar
	 * cadences. */
	assert_rc(tk_calendar_init(&k, "q", TK_CADENCE_MONTH, 840, 0, NAN, 0,
				   NULL, 0),
		  TKSHM_OK);
	assert_rc(tk_calendar_init(&k, "q", TK_CADENCE_DAY, -840, 6, -1, -3,
				   NULL, 0),
		  TKSHM_OK);
	assert_true(k.offset_ms == -840 * 60000.0 && k.week_starts_on == 6);
	assert_rc(tk_calendar_init(&k, "q", TK_CADENCE_FIXED, 0, 1, 1e-3, -1e15,
				   NULL, 0),
		  TKSHM_OK);
	assert_rc(tk_calendar_init(&k, "q", TK_CADENCE_FIXED, 0, 1, 1000, 1e300,
				   NULL, 0),
		  TKSHM_OK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_1700_2300_vs_libc),
		cmocka_unit_test(test_successor_dates_across_eras),
		cmocka_unit_test(test_month_of_day_vs_days_from_civil),
		cmocka_unit_test(test_fixed_days),
		cmocka_unit_test(test_leap_february),
		cmocka_unit_test(test_periods_random_vs_libc),
		cmocka_unit_test(test_month_boundaries),
		cmocka_unit_test(test_week_boundaries),
		cmocka_unit_test(test_day_boundaries),
		cmocka_unit_test(test_fixed_periods),
		cmocka_unit_test(test_validation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
