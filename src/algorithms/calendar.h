/*
 * calendar.h - proleptic-Gregorian civil-date arithmetic and the billing
 * periods of ThrottleKit's quota (docs/semantics.md, "Calendar
 * periods").
 *
 * Civil dates.  tk_days_from_civil() and tk_civil_from_days() implement
 * Howard Hinnant's days_from_civil / civil_from_days, written here from the
 * published description ("chrono-Compatible Low-Level Date Algorithms"):
 * the calendar is cut into 400-year eras of 146097 days each; a year is
 * counted from March 1st, so that the leap day is the last day of the
 * shifted year and month lengths follow the 153-days-per-5-months pattern
 * (31 30 31 30 31 repeated); day 0 is 1970-01-01, which is day 719468 of
 * the era-counting origin 0000-03-01.  All integer arithmetic is int64 with
 * FLOORED division everywhere, so the functions are exact for every date
 * whose day count fits comfortably in int64 (|days| < 2^40 here), before
 * the year 0 as after it.  (ThrottleKit's copies keep Hinnant's sign
 * adjustment for truncating division, era = floor((y - 399) / 400) for
 * y < 0, on top of floored division; that puts some dates before the year
 * -1 one day off.  A quota never meets them: for now >= 0 and offsets within
 * +-14 h every day is >= -1, i.e. in 1969 or later, where both agree.)
 *
 * Periods.  For a time `now` (ms since the epoch) the period [start, reset)
 * containing it, at a fixed UTC offset offsetMs = offsetMinutes * 60000
 * (no daylight saving, by design: that cannot be reproduced in Lua):
 *
 *   local = now + offsetMs          day = floor(local / 86400000)   (D)
 *   calendar-day    [day*D - off, (day+1)*D - off)
 *   calendar-week   dow = (day + 4) mod 7 (0 = Sunday; 1970-01-01 was a
 *                   Thursday), shift = (dow - weekStartsOn) mod 7 (floored
 *                   mod), startDay = day - shift:
 *                   [startDay*D - off, (startDay+7)*D - off)
 *   calendar-month  (y, m) = civil_from_days(day):
 *                   [days_from_civil(y, m, 1)*D - off,
 *                    days_from_civil(next month, 1)*D - off)
 *   fixed           start = anchor + floor((now - anchor)/periodMs)*periodMs
 *                   [start, start + periodMs)
 *
 * The double operations are ThrottleKit's, in its order; the integer steps
 * (day arithmetic) are exact in both, because for now <= 2^42 ms every day
 * count is far below 2^53.
 */
#ifndef TKSHM_ALGORITHMS_CALENDAR_H
#define TKSHM_ALGORITHMS_CALENDAR_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "tkshm.h"
#include "algorithms/rounding.h"

#define TK_MS_PER_DAY 86400000.0

/* ThrottleKit's defaults for the optional period parameters. */
#define TK_CALENDAR_OFFSET_MINUTES_DEFAULT 0
#define TK_CALENDAR_WEEK_STARTS_ON_DEFAULT 1 /* Monday */
#define TK_CALENDAR_ANCHOR_DEFAULT	   0

/* Day counts are clamped to +-2^40 (3 billion years) before any integer
 * arithmetic, so no input can overflow; every now <= 2^42 ms is far
 * inside. */
#define TK_CAL_DAY_LIMIT 1099511627776.0

/* The period kinds.  The values are ThrottleKit's Lua `mode` numbers. */
enum tk_cadence {
	TK_CADENCE_MONTH = 1, /* calendar-month */
	TK_CADENCE_WEEK = 2,  /* calendar-week */
	TK_CADENCE_DAY = 3,   /* calendar-day */
	TK_CADENCE_FIXED = 4, /* fixed: every periodMs from anchor */
};

/* A validated period definition. */
struct tk_calendar {
	enum tk_cadence cadence;
	double offset_ms;	/* offsetMinutes * 60000 (calendar cadences) */
	int64_t week_starts_on; /* 0 = Sunday .. 6 = Saturday */
	double period_ms;	/* fixed only */
	double anchor;		/* fixed only */
};

/*
 * Validates a period definition as ThrottleKit's quota() does:
 * offsetMinutes an integer within +-840, weekStartsOn an integer 0..6,
 * anchor an integer, and for `fixed` periodMs finite and > 0 (and such that
 * every period boundary for 0 <= now <= 2^42 is finite).  The parameters a
 * cadence does not use are validated all the same (ThrottleKit checks every
 * option given); their defaults are offsetMinutes 0, weekStartsOn 1,
 * anchor 0.  periodMs is ignored by the calendar cadences.  `who` prefixes
 * the sentence written to err ("quota").  Returns TKSHM_OK or TKSHM_EPOLICY.
 */
int tk_calendar_init(struct tk_calendar *c, const char *who,
		     enum tk_cadence cadence, double offset_minutes,
		     double week_starts_on, double period_ms, double anchor,
		     char *err, size_t err_len);

/* a / b rounded toward minus infinity, for b > 0. */
static inline int64_t
tk_floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* a mod b in [0, b), for b > 0. */
static inline int64_t
tk_floormod(int64_t a, int64_t b)
{
	return a - tk_floordiv(a, b) * b;
}

/* Days since 1970-01-01 of the civil date y-m-d (m 1..12, d 1..31). */
static inline int64_t
tk_days_from_civil(int64_t y, int m, int d)
{
	/* Years start on March 1st: January and February belong to the
	 * previous (shifted) year. */
	int64_t ys = m <= 2 ? y - 1 : y;
	int64_t era = tk_floordiv(ys, 400);
	int64_t yoe = ys - era * 400;	    /* year of era, 0..399 */
	int64_t mp = m > 2 ? m - 3 : m + 9; /* March = 0 .. February = 11 */
	int64_t doy = tk_floordiv(153 * mp + 2, 5) + d - 1; /* 0..365 */
	int64_t doe = yoe * 365 + tk_floordiv(yoe, 4) - tk_floordiv(yoe, 100) +
		      doy; /* day of era, 0..146096 */

	return era * 146097 + doe - 719468;
}

/* The civil date of day z (days since 1970-01-01); any of y, m, d may be
 * NULL. */
static inline void
tk_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t zs = z + 719468; /* days since 0000-03-01 */
	int64_t era = tk_floordiv(zs, 146097);
	/* Within the era every quantity is >= 0, so its divisions truncate
	 * as floored ones would (and by constants: multiplications). */
	uint64_t doe = (uint64_t)(zs - era * 146097); /* 0..146096 */
	/* Year of era: remove the leap days (one per 4 years, none per 100,
	 * one per 400) before dividing by 365. */
	uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100); /* 0..365 */
	uint64_t mp = (5 * doy + 2) / 153; /* March = 0 .. 11 */
	int64_t dd = (int64_t)(doy - (153 * mp + 2) / 5 + 1);
	int64_t mm = mp < 10 ? (int64_t)mp + 3 : (int64_t)mp - 9;
	int64_t yy = (int64_t)yoe + era * 400 + (mm <= 2 ? 1 : 0);

	if (y)
		*y = yy;
	if (m)
		*m = (int)mm;
	if (d)
		*d = (int)dd;
}

/* Whether civil year y is a leap year (proleptic Gregorian). */
static inline int
tk_civil_is_leap(int64_t y)
{
	return tk_floormod(y, 4) == 0 &&
	       (tk_floormod(y, 100) != 0 || tk_floormod(y, 400) == 0);
}

/* The month holding day z: *first its first day, *next the first day of
 * the next month.  The first is z less its day of the month, the next the
 * first plus the month's length, which is days_from_civil of the two
 * firsts without its eras and floored divisions (a check of every day of
 * years -3000..3000 in tests/unit/test_algo_calendar.c). */
static inline void
tk_civil_month_of(int64_t z, int64_t *first, int64_t *next)
{
	static const unsigned char len[12] = { 31, 28, 31, 30, 31, 30,
					       31, 31, 30, 31, 30, 31 };
	int64_t y;
	int m, d;

	tk_civil_from_days(z, &y, &m, &d);
	*first = z - (d - 1);
	*next = *first + len[m - 1] + (m == 2 && tk_civil_is_leap(y));
}

/* floor(x) as an int64 day count, clamped to +-TK_CAL_DAY_LIMIT (x is
 * already integral). */
static inline int64_t
tk_cal_day(double x)
{
	if (!(x > -TK_CAL_DAY_LIMIT))
		x = -TK_CAL_DAY_LIMIT;
	if (x > TK_CAL_DAY_LIMIT)
		x = TK_CAL_DAY_LIMIT;
	return (int64_t)x;
}

/* The period [*start, *reset) containing `now`. */
static inline void
tk_calendar_period(const struct tk_calendar *c, double now, double *start,
		   double *reset)
{
	double off = c->offset_ms;
	double day;
	int64_t sday, rday;

	if (c->cadence == TK_CADENCE_FIXED) {
		double s =
			c->anchor + tk_floor((now - c->anchor) / c->period_ms) *
					    c->period_ms;

		*start = s;
		*reset = s + c->period_ms;
		return;
	}
	day = tk_floor((now + off) / TK_MS_PER_DAY);
	if (c->cadence == TK_CADENCE_DAY) {
		*start = day * TK_MS_PER_DAY - off;
		*reset = (day + 1) * TK_MS_PER_DAY - off;
		return;
	}
	sday = tk_cal_day(day);
	if (c->cadence == TK_CADENCE_WEEK) {
		int64_t dow = tk_floormod(sday + 4, 7);

		sday -= tk_floormod(dow - c->week_starts_on, 7);
		rday = sday + 7;
	} else {
		tk_civil_month_of(sday, &sday, &rday);
	}
	*start = (double)sday * TK_MS_PER_DAY - off;
	*reset = (double)rday * TK_MS_PER_DAY - off;
}

#endif /* TKSHM_ALGORITHMS_CALENDAR_H */
