/*
 * state_codec.c - Redis state listings to tkshm state words; script
 * arguments and replies (state_codec.h).
 *
 * The decoder is written for hostile input (it will be fuzzed): every
 * element's type is checked before its fields are read, every string is
 * copied into a bounded buffer before it is parsed, ring positions are
 * range-checked before they index anything, and a decoded state is only
 * returned when tk_algo_state_valid_w accepts it.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/decision.h"
#include "base/c_numbers.h"
#include "base/words.h"
#include "redis/state_codec.h"

/* The longest number string decoded.  %.17g needs at most 24 bytes; a
 * longer value (which Lua might still read, with padding) is refused. */
#define TK_NUM_MAX 64

/* Lua 5.1's tonumber on a string (luaO_str2d): strtod, a hexadecimal
 * retry with strtoul when strtod stopped at an 'x', then nothing but white
 * space.  The bytes are copied whole, so an embedded NUL ends the number
 * exactly where Lua's strtod stops. */
static bool
tk_lua_tonumber(const char *s, size_t len, double *out)
{
	char buf[TK_NUM_MAX];
	char *end;
	double v;

	if (!s || len >= sizeof buf)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	v = tk_strtod_c(buf, &end);
	if (end == buf)
		return false;
	if (*end == 'x' || *end == 'X')
		v = (double)strtoul(buf, &end, 16);
	while (*end != '\0' && isspace((unsigned char)*end))
		end++;
	if (*end != '\0')
		return false;
	*out = v;
	return true;
}

static bool
tk_is_string(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_STRING && (r->str || r->len == 0);
}

static bool
tk_is_nil(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_NIL;
}

/* A string element as Lua's tonumber reads it (false: not a number). */
static bool
tk_elem_number(const redisReply *r, double *out)
{
	return tk_lua_tonumber(r->str, r->len, out);
}

/* One value: GET's (gcra's TAT, the shaper's departure). */
static int
tk_decode_one(const redisReply *const *e, size_t n, uint64_t *w, bool *present)
{
	double v;

	if (n == 0)
		return TKSHM_OK;
	if (n != 1 || !(tk_is_nil(e[0]) || tk_is_string(e[0])))
		return TKSHM_EREDIS;
	if (tk_is_string(e[0]) && tk_elem_number(e[0], &v)) {
		w[0] = tk_f64_word(v);
		*present = true;
	}
	return TKSHM_OK;
}

/* Two hash fields (HMGET t l, HMGET s c): present when both are numbers,
 * as the scripts read them. */
static int
tk_decode_pair(const redisReply *const *e, size_t n, uint64_t *w, bool *present)
{
	double x, y;

	if (n == 0)
		return TKSHM_OK;
	if (n != 2)
		return TKSHM_EREDIS;
	for (size_t i = 0; i < 2; i++)
		if (!tk_is_nil(e[i]) && !tk_is_string(e[i]))
			return TKSHM_EREDIS;
	if (tk_is_string(e[0]) && tk_is_string(e[1]) &&
	    tk_elem_number(e[0], &x) && tk_elem_number(e[1], &y)) {
		w[0] = tk_f64_word(x);
		w[1] = tk_f64_word(y);
		*present = true;
	}
	return TKSHM_OK;
}

/* One ring entry of a sliding window: field p -> "<idx>:<count>".  True
 * with *p, *idx, *count when it parses and idx belongs to field p, as
 * sliding_window.lua accepts it (other entries read as empty there). */
static bool
tk_ring_entry(const struct tk_sliding_window *sw, const redisReply *f,
	      const redisReply *v, unsigned *p, int64_t *idx, double *count)
{
	const char *colon;
	double fp, j, c;

	if (!tk_elem_number(f, &fp) || !v->str)
		return false;
	colon = memchr(v->str, ':', v->len);
	if (!colon)
		return false;
	if (!tk_lua_tonumber(v->str, (size_t)(colon - v->str), &j) ||
	    !tk_lua_tonumber(colon + 1, v->len - (size_t)(colon - v->str) - 1,
			     &c))
		return false;
	if (c != c || !(fp >= 0) || !(fp <= sw->S) || fp != floor(fp))
		return false;
	if (!(j >= 0) || !(j <= (double)TK_SLIDING_WINDOW_TICK_MAX) ||
	    j != floor(j))
		return false;
	if ((uint64_t)j % sw->slots != (uint64_t)fp)
		return false;
	*p = (unsigned)fp;
	*idx = (int64_t)j;
	*count = c;
	return true;
}

/* HGETALL of a ring, into tkshm's state (sliding_window.h): the newest
 * tick of the entries in word 0, the count of entry p at word 1 + p when
 * its tick is in the window newest-S .. newest (an older entry is never
 * read by sliding_window.lua either: its decisions look at ticks c-S .. c,
 * c >= newest).  Every parsed entry's count must be a double > 0, as the
 * Lua script writes them, older ones too. */
static int
tk_decode_ring(const struct tk_sliding_window *sw, const redisReply *const *e,
	       size_t n, uint64_t *w, bool *present)
{
	int64_t tick[TK_SLIDING_WINDOW_MAX_BUCKETS + 1];
	double count[TK_SLIDING_WINDOW_MAX_BUCKETS + 1];
	int64_t newest = -1;

	if (n % 2 != 0 || sw->slots > TK_SLIDING_WINDOW_MAX_BUCKETS + 1)
		return TKSHM_EREDIS;
	for (unsigned p = 0; p < sw->slots; p++)
		tick[p] = -1;
	for (size_t i = 0; i < n; i += 2) {
		unsigned p;
		int64_t idx;
		double c;

		if (!tk_is_string(e[i]) || !tk_is_string(e[i + 1]))
			return TKSHM_EREDIS;
		if (!tk_ring_entry(sw, e[i], e[i + 1], &p, &idx, &c))
			continue;
		if (tick[p] >= 0)
			return TKSHM_EREDIS; /* a field listed twice */
		if (!(c > 0) || !isfinite(c))
			return TKSHM_EREDIS;
		tick[p] = idx;
		count[p] = c;
		if (idx > newest)
			newest = idx;
	}
	*present = newest >= 0;
	if (newest < 0)
		return TKSHM_OK;
	w[0] = tk_i64_word(newest + 1);
	for (unsigned p = 0; p < sw->slots; p++)
		if (tick[p] >= 0 && tick[p] >= newest - (int64_t)sw->S)
			w[1 + p] = tk_f64_word(count[p]);
	return TKSHM_OK;
}

/* ZRANGE WITHSCORES of a log: n stamps at words 1..n, n in word 0. */
static int
tk_decode_log(const struct tk_sliding_log *sl, const redisReply *const *e,
	      size_t n, uint64_t *w, bool *present)
{
	size_t m = n / 2;

	if (n % 2 != 0 || m > sl->cap)
		return TKSHM_EREDIS;
	for (size_t i = 0; i < m; i++) {
		double s;

		if (!tk_is_string(e[2 * i]) || !tk_is_string(e[2 * i + 1]) ||
		    !tk_elem_number(e[2 * i + 1], &s))
			return TKSHM_EREDIS;
		w[1 + i] = tk_f64_word(s);
	}
	w[0] = m;
	*present = m > 0;
	return TKSHM_OK;
}

int
tk_state_from_reply(const struct tk_algo *a, const redisReply *const *elems,
		    size_t n, uint64_t *words, bool *present)
{
	int rc;

	if (!a || !words || !present || (n > 0 && !elems))
		return TKSHM_ENULL;
	if (tk_state_read_type(a) == 0)
		return TKSHM_ENOTSUP;
	if (a->words == 0 || a->words > TK_ALGO_MAX_WORDS)
		return TKSHM_EREDIS;
	for (size_t i = 0; i < n; i++)
		if (!elems[i])
			return TKSHM_EREDIS;
	memset(words, 0, sizeof *words * a->words);
	*present = false;
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
	case TKSHM_KIND_LEAKY_BUCKET:
		rc = tk_decode_one(elems, n, words, present);
		break;
	case TKSHM_KIND_TOKEN_BUCKET:
	case TKSHM_KIND_FIXED_WINDOW:
		rc = tk_decode_pair(elems, n, words, present);
		break;
	case TKSHM_KIND_SLIDING_WINDOW:
		rc = tk_decode_ring(&a->u.sliding_window, elems, n, words,
				    present);
		break;
	case TKSHM_KIND_QUOTA:
		rc = a->u.quota.cadence == TK_QUOTA_ROLLING ?
			     tk_decode_ring(&a->u.quota.sw, elems, n, words,
					    present) :
			     tk_decode_pair(elems, n, words, present);
		break;
	case TKSHM_KIND_SLIDING_LOG:
		rc = tk_decode_log(&a->u.sliding_log, elems, n, words, present);
		break;
	default:
		return TKSHM_ENOTSUP;
	}
	if (rc != TKSHM_OK)
		return rc;
	if (*present && !tk_algo_state_valid_w(a, words))
		return TKSHM_EREDIS;
	if (!*present)
		memset(words, 0, sizeof *words * a->words);
	return TKSHM_OK;
}

int
tk_state_read_type(const struct tk_algo *a)
{
	if (!a)
		return 0;
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
	case TKSHM_KIND_LEAKY_BUCKET:
		return 1;
	case TKSHM_KIND_TOKEN_BUCKET:
		return 2;
	case TKSHM_KIND_FIXED_WINDOW:
		return 3;
	case TKSHM_KIND_SLIDING_WINDOW:
		return 4;
	case TKSHM_KIND_QUOTA:
		return a->u.quota.cadence == TK_QUOTA_ROLLING ? 4 : 3;
	case TKSHM_KIND_SLIDING_LOG:
		return 5;
	default:
		return 0;
	}
}

size_t
tk_arg_f64(char *buf, size_t len, double v)
{
	int n;

	if (!buf || len == 0)
		return 0;
	buf[0] = '\0';
	if (!isfinite(v))
		return 0;
	/* %.17g would print 1e+17 for an integer that large; Redis commands
	 * taking integers (PX, PEXPIRE) want digits. */
	if (v == floor(v) && fabs(v) < 1e21)
		n = tk_snprintf_c(buf, len, "%.0f", v);
	else
		n = tk_snprintf_c(buf, len, "%.17g", v);
	if (n < 0 || (size_t)n >= len) {
		buf[0] = '\0';
		return 0;
	}
	return (size_t)n;
}

/* The reply's array elements from index `from` on, as a state listing. */
static void
tk_reply_tail(const redisReply *r, size_t from, const redisReply *const **state,
	      size_t *nstate)
{
	*state = (const redisReply *const *)(r->element + from);
	*nstate = r->elements - from;
}

static bool
tk_reply_ints(const redisReply *r, size_t k)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < k ||
	    !r->element)
		return false;
	for (size_t i = 0; i < k; i++)
		if (!r->element[i] ||
		    r->element[i]->type != REDIS_REPLY_INTEGER)
			return false;
	return true;
}

int
tk_reply_check(const redisReply *r, tkshm_decision *d, int64_t *now_ms,
	       const redisReply *const **state, size_t *nstate)
{
	if (!r || !d || !now_ms || !state || !nstate)
		return TKSHM_ENULL;
	if (!tk_reply_ints(r, 6))
		return TKSHM_EREDIS;
	if (r->element[0]->integer != 0 && r->element[0]->integer != 1)
		return TKSHM_EREDIS;
	d->allowed = r->element[0]->integer == 1;
	d->limit = r->element[1]->integer;
	d->remaining = r->element[2]->integer;
	d->reset_at = r->element[3]->integer;
	d->retry_after_ms = r->element[4]->integer;
	d->flags = 0;
	*now_ms = r->element[5]->integer;
	tk_reply_tail(r, 6, state, nstate);
	return TKSHM_OK;
}

int
tk_reply_reservation(const redisReply *r, tkshm_reservation *out,
		     int64_t *now_ms, const redisReply *const **state,
		     size_t *nstate)
{
	const redisReply *w;
	double wait;

	if (!r || !out || !now_ms || !state || !nstate)
		return TKSHM_ENULL;
	if (!tk_reply_ints(r, 3) || r->elements < 5 || !r->element[3] ||
	    !r->element[4] || r->element[4]->type != REDIS_REPLY_INTEGER)
		return TKSHM_EREDIS;
	w = r->element[3];
	if (!tk_is_string(w) || !tk_elem_number(w, &wait) || !isfinite(wait))
		return TKSHM_EREDIS;
	if (r->element[0]->integer != 0 && r->element[0]->integer != 1)
		return TKSHM_EREDIS;
	out->accepted = r->element[0]->integer == 1;
	out->delay_ms = r->element[1]->integer;
	out->retry_after_ms = r->element[2]->integer;
	out->wait_ms = wait;
	*now_ms = r->element[4]->integer;
	tk_reply_tail(r, 5, state, nstate);
	return TKSHM_OK;
}

bool
tk_decision_valid(const struct tk_algo *a, const tkshm_decision *d)
{
	return d->limit == tk_field(tk_algo_capacity(a)) && d->remaining >= 0 &&
	       d->remaining <= d->limit && d->reset_at >= 0 &&
	       d->retry_after_ms >= 0 &&
	       (!d->allowed || d->retry_after_ms == 0);
}

bool
tk_decision_accept(const struct tk_algo *a, tkshm_decision *d)
{
	if (!tk_decision_valid(a, d))
		return false;
	if (!d->allowed)
		d->retry_after_ms = tk_denial_retry(d->retry_after_ms);
	return true;
}

bool
tk_reservation_valid(const tkshm_reservation *r)
{
	return r->delay_ms >= 0 && r->retry_after_ms >= 0 && r->wait_ms >= 0 &&
	       (!r->accepted || r->retry_after_ms == 0);
}
