/*
 * life_change.c - what a policy or size change does to a table: nothing,
 * a policy written in place, or a replacement (protocol.h L1, L2), and the
 * operator's sentence for it ("limit 20 -> 40, states kept").
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/convert.h"
#include "api/life_change.h"
#include "shm/carry.h"
#include "shm/life.h"
#include "shm/table.h"

static void
tk_append(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

/* A formatted policy's options ("limit=20,periodMs=1000;lease,...") as
 * name/value pairs; a word without '=' (a mode) is its own name. */
struct tk_opts {
	unsigned n;
	char name[24][48];
	char value[24][96];
};

static void
tk_opts_split(const char *list, struct tk_opts *o)
{
	o->n = 0;
	for (const char *p = list; *p && o->n < 24;) {
		size_t l = strcspn(p, ",;");
		const char *eq = memchr(p, '=', l);
		size_t nl = eq ? (size_t)(eq - p) : l;

		snprintf(o->name[o->n], sizeof o->name[0], "%.*s", (int)nl, p);
		snprintf(o->value[o->n], sizeof o->value[0], "%.*s",
			 eq ? (int)(l - nl - 1) : 0, eq ? eq + 1 : "");
		o->n++;
		p += l;
		if (*p)
			p++;
	}
}

static const char *
tk_opts_get(const struct tk_opts *o, const char *name)
{
	for (unsigned i = 0; i < o->n; i++)
		if (strcmp(o->name[i], name) == 0)
			return o->value[i];
	return NULL;
}

/* "limit 20 -> 40, burst 20 -> 40" for two formatted option lists of one
 * kind: every option whose text differs, in the new list's order, then the
 * options only the old one had. */
static void
tk_diff_options(const char *a, const char *b, char *buf, size_t len)
{
	struct tk_opts la, lb;
	bool first = true;

	tk_opts_split(a, &la);
	tk_opts_split(b, &lb);
	for (unsigned i = 0; i < lb.n; i++) {
		const char *va = tk_opts_get(&la, lb.name[i]);

		if (va && strcmp(va, lb.value[i]) == 0)
			continue;
		tk_append(buf, len, "%s%s %s -> %s", first ? "" : ", ",
			  lb.name[i], va ? va : "(unset)", lb.value[i]);
		first = false;
	}
	for (unsigned i = 0; i < la.n; i++) {
		if (tk_opts_get(&lb, la.name[i]))
			continue;
		tk_append(buf, len, "%s%s %s -> (unset)", first ? "" : ", ",
			  la.name[i], la.value[i]);
		first = false;
	}
}

/* The formatted policy's kind and options: "gcra" and "limit=...". */
static void
tk_formatted(const tkshm_policy *p, char *kind, size_t klen, char *opts,
	     size_t olen)
{
	char buf[TKSHM_POLICY_MAX];
	const char *colon;

	if (tkshm_policy_format(p, buf, sizeof buf) < 0)
		snprintf(buf, sizeof buf, "kind%d:", (int)p->kind);
	colon = strchr(buf, ':');
	snprintf(kind, klen, "%.*s", colon ? (int)(colon - buf) : 0, buf);
	snprintf(opts, olen, "%s", colon ? colon + 1 : "");
}

static void
tk_change_text(const struct tkshm_table *t, const tkshm_policy *want,
	       tkshm_change *out, bool shrink_refused, uint64_t asked)
{
	char ka[64], kb[64], oa[TKSHM_POLICY_MAX], ob[TKSHM_POLICY_MAX];
	char *buf = out->text;
	size_t len = sizeof out->text;

	buf[0] = '\0';
	tk_formatted(&t->policy, ka, sizeof ka, oa, sizeof oa);
	tk_formatted(want, kb, sizeof kb, ob, sizeof ob);
	if (strcmp(ka, kb) != 0)
		tk_append(buf, len, "kind %s -> %s (%s)", ka, kb, ob);
	else
		tk_diff_options(oa, ob, buf, len);
	if (out->slots_after != out->slots_before)
		tk_append(buf, len, "%sslots %" PRIu64 " -> %" PRIu64,
			  buf[0] ? ", " : "", out->slots_before,
			  out->slots_after);
	if (shrink_refused)
		tk_append(buf, len,
			  "%sslots %" PRIu64 " kept (%" PRIu64
			  " asked: a table does not shrink)",
			  buf[0] ? ", " : "", out->slots_before, asked);
	switch (out->kind) {
	case TKSHM_CHANGE_NONE:
		if (!buf[0])
			tk_append(buf, len, "unchanged");
		break;
	case TKSHM_CHANGE_IN_PLACE:
		tk_append(buf, len, ", states kept");
		break;
	case TKSHM_CHANGE_REPLACE:
		tk_append(buf, len, out->states_kept ?
					    ": replaced, states carried over" :
					    ": replaced, keys start afresh");
		break;
	case TKSHM_CHANGE_CREATE:
		break;
	}
}

const char *
tkshm_change_name(tkshm_change_kind kind)
{
	switch (kind) {
	case TKSHM_CHANGE_NONE:
		return "none";
	case TKSHM_CHANGE_CREATE:
		return "create";
	case TKSHM_CHANGE_IN_PLACE:
		return "in_place";
	case TKSHM_CHANGE_REPLACE:
		return "replace";
	}
	return "unknown";
}

int
tk_change_check_args(const tkshm_policy *policy, uint64_t slots,
		     const tkshm_options *o)
{
	struct tk_algo algo;
	char why[160];

	if (slots > TKSHM_MAX_SLOTS) {
		if (o && o->errbuf && o->errbuf_len)
			snprintf(o->errbuf, o->errbuf_len,
				 "slots must be at most %" PRIu64,
				 (uint64_t)TKSHM_MAX_SLOTS);
		return TKSHM_EINVAL;
	}
	if (policy && tk_algo_init(&algo, policy, why, sizeof why) != TKSHM_OK) {
		if (o && o->errbuf && o->errbuf_len)
			snprintf(o->errbuf, o->errbuf_len, "%s", why);
		return TKSHM_EPOLICY;
	}
	return TKSHM_OK;
}

int
tk_change_plan(const struct tkshm_table *t, const tkshm_policy *policy,
	       uint64_t slots, tkshm_change *out)
{
	const tkshm_policy *want = policy ? policy : &t->policy;
	struct tk_algo algo;
	char why[160];
	bool policy_differs, shrink = false;
	uint64_t asked = slots ? tk_slots_rounded(slots) : 0;

	memset(out, 0, sizeof *out);
	if (slots > TKSHM_MAX_SLOTS)
		return TKSHM_EINVAL;
	if (tk_algo_init(&algo, want, why, sizeof why) != TKSHM_OK)
		return TKSHM_EPOLICY;
	out->slots_before = out->slots_after = tk_segment_slots(t);
	if (asked > out->slots_before)
		out->slots_after = asked;
	else if (asked && asked < out->slots_before)
		shrink = true;
	policy_differs = !tkshm_policy_equal(want, &t->policy);
	out->kind = TKSHM_CHANGE_NONE;
	if (out->slots_after != out->slots_before ||
	    (policy_differs &&
	     !tk_algo_same_shape(&algo, want, &t->algo, &t->policy)))
		out->kind = TKSHM_CHANGE_REPLACE;
	else if (policy_differs)
		out->kind = TKSHM_CHANGE_IN_PLACE;
	out->states_kept = out->kind != TKSHM_CHANGE_REPLACE ||
			   tk_algo_converts(&t->algo, &algo);
	tk_change_text(t, want, out, shrink, asked);
	return TKSHM_OK;
}

void
tk_change_creating(const tkshm_policy *p, uint64_t slots, bool anonymous,
		   tkshm_change *out)
{
	char buf[TKSHM_POLICY_MAX];

	memset(out, 0, sizeof *out);
	out->kind = TKSHM_CHANGE_CREATE;
	out->states_kept = false; /* there were none */
	out->slots_after = slots;
	if (!p || tkshm_policy_format(p, buf, sizeof buf) < 0)
		buf[0] = '\0';
	snprintf(out->text, sizeof out->text,
		 "created%s: %.400s, %" PRIu64 " slots",
		 anonymous ? " (anonymous)" : "", buf, slots);
}

void
tk_change_created(const struct tkshm_table *t, tkshm_change *out)
{
	tk_change_creating(&t->policy, tk_segment_slots(t), t->anonymous, out);
}

void
tk_change_say_mismatch(const tkshm_options *o, const struct tkshm_table *t,
		       const tkshm_policy *want, const tkshm_change *c)
{
	char a[TKSHM_POLICY_MAX], b[TKSHM_POLICY_MAX];

	if (!o->errbuf || !o->errbuf_len)
		return;
	if (tkshm_policy_format(&t->policy, a, sizeof a) < 0)
		a[0] = '\0';
	if (!want || tkshm_policy_format(want, b, sizeof b) < 0)
		snprintf(b, sizeof b, "%s", a);
	snprintf(o->errbuf, o->errbuf_len,
		 "table policy is \"%s\", not \"%s\" (%s); %s", a, b, c->text,
		 (o->flags & TKSHM_O_RDONLY) ?
			 "a read-only open changes nothing" :
			 "TKSHM_O_KEEP asks to change nothing");
}

void
tk_change_say_invalid(const tkshm_options *o, int rc)
{
	if (o->errbuf && o->errbuf_len && o->errbuf[0] == '\0')
		snprintf(o->errbuf, o->errbuf_len, "%s", tkshm_strerror(rc));
}

uint64_t
tk_permit_epoch_after(const struct tkshm_table *t, const tkshm_policy *policy)
{
	struct tk_algo algo;
	char why[8];

	if (!tk_algo_is_concurrency(&t->algo) ||
	    tk_algo_init(&algo, policy, why, sizeof why) != TKSHM_OK ||
	    !tk_algo_same_reading(&t->algo, &algo))
		return 0;
	return t->permit_epoch;
}
