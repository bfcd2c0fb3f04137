/*
 * cmd_reset.c - `tkshm-inspect reset PATH KEY [--json]`: forgets one key
 * (tkshm_reset), which also unblocks it.  The table is attached read-write
 * with its stored policy and never created.
 *
 * tkshm_reset succeeds for an absent key, so a mistyped key would look
 * reset: the key is looked up first.  Absent, with no remembered debt that
 * a check of it would see, there is nothing to reset: that is said, with
 * exit status 1 as for show.  Absent but in remembered debt (an evicted
 * debtor), the reset clears that debt and succeeds.  The lookup is what the
 * table held just before the reset: a worker may insert the key between.
 */
#include <string.h>

#include "inspect.h"

void
ti_usage_reset(FILE *f)
{
	fputs("Usage: " TI_PROG " reset PATH KEY [--json]\n"
	      "\n"
	      "Forgets KEY in the existing table PATH: its next check starts\n"
	      "fresh, as for a key never seen (a blocked key is unblocked).\n"
	      "Also clears the remembered debt of the key's hash cell, which\n"
	      "a few other keys share.  Prints 'reset KEY'.\n"
	      "\n"
	      "A KEY not in the table is reported and nothing is reset (exit\n"
	      "status 1), unless a check of it would see remembered debt (an\n"
	      "evicted key in debt): that debt is cleared, and 'reset KEY\n"
	      "(not in the table; its remembered debt cleared)' printed.\n"
	      "\n"
	      "KEY is written as list prints it: bytes 0x21..0x7e as they are,\n"
	      "'\\\\' for a backslash and '\\xNN' for any other byte.\n"
	      "The table is mapped read-write (never created); without write\n"
	      "permission the exit status is 3.\n"
	      "\n"
	      "Options:\n"
	      "  --json            print {\"table\":PATH,\"key\":KEY,"
	      "\"reset\":BOOL,\n"
	      "                    \"inTable\":BOOL}\n"
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

static int
ti_reset_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	(void)cmd;
	(void)name;
	(void)value;
	*(bool *)ctx = true; /* --json, the only other option */
	return TI_GO_ON;
}

/* Exit code for a failed tkshm_reset, after saying why. */
static int
ti_reset_failed(const char *path, const char *key, int rc)
{
	ti_err("cannot reset %s in %s: %s", key, path, tkshm_strerror(rc));
	switch (rc) {
	case TKSHM_EREADONLY:
	case TKSHM_EPERM:
		return TI_EXIT_OPEN;
	case TKSHM_EBUSY:
	case TKSHM_ECORRUPT:
		/* As replay reports a check the table cannot make; a corrupt
		 * key is for verify to explain. */
		return TI_EXIT_CHECK;
	default:
		return TI_EXIT_IO;
	}
}

/* What the table held of the key just before the reset. */
enum ti_reset_found {
	TI_RESET_IN_TABLE, /* a slot (or a look that did not settle) */
	TI_RESET_DEBT,	   /* no slot, but remembered debt */
	TI_RESET_ABSENT,   /* nothing to reset */
};

/* tkshm_entry_get_at's TKSHM_EBUSY means the key's record kept moving
 * under writers; a few more looks usually catch it still (as show). */
#define TI_RESET_TRIES 8

static enum ti_reset_found
ti_reset_lookup(tkshm_table *t, const unsigned char *key, size_t len)
{
	double now = tkshm_now_ms();
	tkshm_decision d;
	tkshm_entry e;
	int rc = TKSHM_EBUSY;

	for (int i = 0; i < TI_RESET_TRIES && rc == TKSHM_EBUSY; i++)
		rc = tkshm_entry_get_at(t, key, len, now, &e);
	/* Any other failure is the reset's to report. */
	if (rc != TKSHM_ENOENT)
		return TI_RESET_IN_TABLE;
	/* As show's "remembered debt": a check would start below full. */
	if (tkshm_peek_at(t, key, len, now, &d) == TKSHM_OK &&
	    d.remaining < d.limit)
		return TI_RESET_DEBT;
	return TI_RESET_ABSENT;
}

static void
ti_reset_print(const char *path, const char *key, enum ti_reset_found found,
	       bool json)
{
	struct ti_json j;

	if (!json) {
		if (found == TI_RESET_IN_TABLE)
			printf("reset %s\n", key);
		else if (found == TI_RESET_DEBT)
			printf("reset %s (not in the table; its remembered "
			       "debt cleared)\n",
			       key);
		return;
	}
	ti_json_init(&j, stdout, false);
	ti_json_begin_obj(&j, NULL);
	ti_json_string(&j, "table", path);
	ti_json_string(&j, "key", key);
	ti_json_bool(&j, "reset", found != TI_RESET_ABSENT);
	ti_json_bool(&j, "inTable", found == TI_RESET_IN_TABLE);
	ti_json_end_obj(&j);
}

int
ti_cmd_reset(int argc, char **argv)
{
	static const struct option opts[] = { TI_OPT_HELP, TI_OPT_FLAG("json"),
					      TI_OPT_END };
	static const char *const names[] = { "PATH", "KEY", NULL };
	const char *v[2];
	struct ti_operands ops = { .names = names, .min = 2, .max = 2, .v = v };
	bool json = false;
	struct ti_cmdline c =
		TI_CMDLINE("reset", ti_usage_reset, opts, ti_reset_opt, &json);
	unsigned char key[TKSHM_KEY_MAX];
	char full[4200], text[TI_KEY_TEXT_MAX];
	enum ti_reset_found found;
	const char *path;
	tkshm_table *t;
	size_t len;
	int k, rc;

	if ((k = ti_cmdline_operands(&c, &ops, argc, argv)) != TI_GO_ON)
		return k;
	if (!ti_key_unescape("reset", v[1], key, &len))
		return TI_EXIT_USAGE;
	path = v[0];
	if ((k = ti_open_rdwr(&path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	found = ti_reset_lookup(t, key, len);
	rc = found == TI_RESET_ABSENT ? TKSHM_OK : tkshm_reset(t, key, len);
	tkshm_close(t);
	/* The key as list prints it, whatever escapes the operand used. */
	ti_key_escape(key, len, text, sizeof text);
	if (rc != TKSHM_OK)
		return ti_reset_failed(path, text, rc);
	ti_reset_print(path, text, found, json);
	if (found != TI_RESET_ABSENT)
		return ti_finish_stdout(TI_EXIT_OK);
	k = ti_finish_stdout(TI_EXIT_CHECK);
	ti_err("reset: key not in the table, nothing reset: %s", text);
	return k;
}
