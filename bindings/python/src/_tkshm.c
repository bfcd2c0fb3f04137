/* _tkshm: the CPython binding of tkshm (the C API directly).
 *
 * tkshm/__init__.py re-exports this module's names as `tkshm`:
 *   Table(path, policy=None, slots=0, create=True, mode=0o600,
 *         keep=False, private=False)
 *   Table.check / peek / reset / stats / apply / close / policy / change,
 *         a context manager
 *   Change: a named tuple (kind, states_kept, slots_before, slots_after,
 *           text): what an open, Table.apply() or plan() did or would do
 *   plan(path, policy=None, slots=0) -> Change, changing nothing
 *   Decision: a frozen result (allowed, limit, remaining, reset_at,
 *             retry_after_ms, flags; bool(d) == d.allowed)
 *   Error(Exception): .code (the library's negative code), .name
 *   Redis(*, host=None, port=None, ...): a connection handle for strict
 *         tables (tkshm_redis.h); Table.attach(redis), Table(redis=...)
 *
 * The GIL is held across every library call but one kind.  A check takes
 * ~50 ns; giving up and taking back the GIL costs more than that, and
 * would let another thread close() the handle during the call.  Those
 * calls never block: the library never waits on a lock (a lost
 * compare-and-swap is retried).  The exception: a check or peek of a table
 * with a Redis object attached waits on the network (up to the command
 * timeout), so it runs with the GIL released and the Redis object's lock
 * held, which every call that could close, detach or reuse that handle
 * takes first (a tkshm_redis serves one thread at a time). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <tkshm.h>
#include <tkshm_http.h>
#include <tkshm_redis.h>

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <unistd.h>

typedef struct {
	PyObject *error; /* tkshm.Error */
	PyTypeObject *decision_type;
	PyTypeObject *table_type;
	PyTypeObject *change_type; /* tkshm.Change, a named tuple */
	PyTypeObject *redis_type;
} module_state;

static struct PyModuleDef tkshm_module;

static module_state *
state_of_type(PyTypeObject *tp)
{
	PyObject *m = PyType_GetModuleByDef(tp, &tkshm_module);
	return m ? (module_state *)PyModule_GetState(m) : NULL;
}

/* Raises tkshm.Error(message) with .code and .name; returns NULL. */
static PyObject *
raise_code(module_state *st, int code, const char *detail)
{
	PyObject *exc;
	PyObject *val;

	if (detail && detail[0])
		exc = PyObject_CallFunction(st->error, "s", detail);
	else
		exc = PyObject_CallFunction(st->error, "s",
					    tkshm_strerror(code));
	if (!exc)
		return NULL;
	val = PyLong_FromLong(code);
	if (!val || PyObject_SetAttrString(exc, "code", val) < 0)
		goto fail;
	Py_DECREF(val);
	val = PyUnicode_FromString(tkshm_error_name(code));
	if (!val || PyObject_SetAttrString(exc, "name", val) < 0)
		goto fail;
	Py_DECREF(val);
	PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
	Py_DECREF(exc);
	return NULL;
fail:
	Py_XDECREF(val);
	Py_DECREF(exc);
	return NULL;
}

/* ------------------------------------------------------------------------
 * Decision
 * ---------------------------------------------------------------------- */

typedef struct {
	PyObject_HEAD tkshm_decision d;
	char allowed; /* T_BOOL member */
} DecisionObject;

static PyMemberDef decision_members[] = {
	{ "allowed", T_BOOL, offsetof(DecisionObject, allowed), READONLY,
	  "admitted (and consumed)" },
	{ "limit", T_LONGLONG, offsetof(DecisionObject, d.limit), READONLY,
	  "the effective ceiling" },
	{ "remaining", T_LONGLONG, offsetof(DecisionObject, d.remaining),
	  READONLY, "whole units left" },
	{ "reset_at", T_LONGLONG, offsetof(DecisionObject, d.reset_at),
	  READONLY, "epoch ms of full replenishment" },
	{ "retry_after_ms", T_LONGLONG,
	  offsetof(DecisionObject, d.retry_after_ms), READONLY,
	  "ms to wait before a retry can pass (0 when allowed)" },
	{ "flags", T_UINT, offsetof(DecisionObject, d.flags), READONLY,
	  "TKSHM_DECISION_* bits" },
	{ NULL, 0, 0, 0, NULL },
};

static PyObject *
decision_new(module_state *st, const tkshm_decision *d)
{
	DecisionObject *o = PyObject_New(DecisionObject, st->decision_type);

	if (!o)
		return NULL;
	o->d = *d;
	o->allowed = d->allowed ? 1 : 0;
	return (PyObject *)o;
}

static void
decision_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);

	PyObject_Free(self);
	Py_DECREF(tp);
}

static int
decision_bool(PyObject *self)
{
	return ((DecisionObject *)self)->allowed;
}

static PyObject *
decision_repr(PyObject *self)
{
	const tkshm_decision *d = &((DecisionObject *)self)->d;

	return PyUnicode_FromFormat(
		"tkshm.Decision(allowed=%s, limit=%lld, remaining=%lld, "
		"reset_at=%lld, retry_after_ms=%lld)",
		d->allowed ? "True" : "False", (long long)d->limit,
		(long long)d->remaining, (long long)d->reset_at,
		(long long)d->retry_after_ms);
}

static PyObject *
decision_richcompare(PyObject *a, PyObject *b, int op)
{
	const tkshm_decision *x;
	const tkshm_decision *y;
	int eq;

	if (Py_TYPE(a) != Py_TYPE(b) || (op != Py_EQ && op != Py_NE))
		Py_RETURN_NOTIMPLEMENTED;
	x = &((DecisionObject *)a)->d;
	y = &((DecisionObject *)b)->d;
	eq = x->allowed == y->allowed && x->limit == y->limit &&
	     x->remaining == y->remaining && x->reset_at == y->reset_at &&
	     x->retry_after_ms == y->retry_after_ms && x->flags == y->flags;
	return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t
decision_hash(PyObject *self)
{
	const tkshm_decision *d = &((DecisionObject *)self)->d;
	Py_hash_t h = (Py_hash_t)(d->allowed ? 1 : 0);

	h = h * 1000003 ^ (Py_hash_t)d->limit;
	h = h * 1000003 ^ (Py_hash_t)d->remaining;
	h = h * 1000003 ^ (Py_hash_t)d->reset_at;
	h = h * 1000003 ^ (Py_hash_t)d->retry_after_ms;
	h = h * 1000003 ^ (Py_hash_t)d->flags;
	return h == -1 ? -2 : h;
}

static PyType_Slot decision_slots[] = {
	{ Py_tp_doc, "The frozen result of a check or peek; bool() is "
		     "`allowed`." },
	{ Py_tp_dealloc, decision_dealloc },
	{ Py_tp_members, decision_members },
	{ Py_tp_repr, decision_repr },
	{ Py_tp_richcompare, decision_richcompare },
	{ Py_tp_hash, decision_hash },
	{ Py_nb_bool, decision_bool },
	{ 0, NULL },
};

static PyType_Spec decision_spec = {
	.name = "tkshm.Decision",
	.basicsize = sizeof(DecisionObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
		 Py_TPFLAGS_DISALLOW_INSTANTIATION,
	.slots = decision_slots,
};

/* ------------------------------------------------------------------------
 * Redis: a connection handle for strict tables
 * ---------------------------------------------------------------------- */

/* Without the library's Redis tier (built without hiredis) the type exists
 * but cannot be made: its constructor raises ENOTSUP saying why. */
#ifdef TKSHM_PY_HAVE_REDIS
#define tk_py_redis_open   tkshm_redis_open
#define tk_py_redis_attach tkshm_redis_attach
#define tk_py_redis_close  tkshm_redis_close
#else
static int
tk_py_redis_open(const tkshm_redis_options *o, tkshm_redis **out)
{
	(void)o;
	*out = NULL;
	return TKSHM_ENOTSUP;
}
static int
tk_py_redis_attach(tkshm_table *t, tkshm_redis *r)
{
	(void)t;
	(void)r;
	return TKSHM_ENOTSUP;
}
static void
tk_py_redis_close(tkshm_redis *r)
{
	(void)r;
}
#endif

typedef struct RedisObject RedisObject;

typedef struct TableObject {
	PyObject_HEAD tkshm_table *t;
	PyObject *policy;    /* canonical policy string */
	tkshm_change change; /* what the open (or the last apply) did */
	RedisObject *redis;  /* attached (a strong reference), or NULL */
	/* The other tables attached to the same Redis object (its list, so
	 * that closing it can detach them all). */
	struct TableObject *rnext, *rprev;
} TableObject;

struct RedisObject {
	PyObject_HEAD tkshm_redis *r; /* NULL: closed (or never opened) */
	/* Held around every use of r: a check or peek of an attached table,
	 * an attach, a detach, a close.  Taken with the GIL released. */
	PyThread_type_lock lock;
	unsigned long lock_gen; /* the fork generation it was made in */
	TableObject *tables;	/* attached: borrowed, each holds us */
	PyObject *where;	/* "127.0.0.1:6379", "cluster=...": repr */
	/* A table refused its detach (its policy is no longer strict, so
	 * tkshm_redis_attach(t, NULL) says ENOTSUP) and still points at r:
	 * r is then left open rather than freed under it. */
	int keep_handle;
};

/* Bumped in every child of a fork() (mark_forked): a Redis object's lock
 * made before may have been held by a thread that the child does not
 * have, so the child makes a new one. */
static volatile unsigned long fork_generation;

/* Takes ro's lock.  The GIL is released while waiting: the holder needs it
 * to finish.  0, or -1 with MemoryError. */
static int
redis_lock(RedisObject *ro)
{
	if (ro->lock_gen != fork_generation) {
		PyThread_type_lock l = PyThread_allocate_lock();

		if (!l) {
			PyErr_NoMemory();
			return -1;
		}
		/* Nobody waits on the old one here: this thread is the
		 * child's only one. */
		PyThread_free_lock(ro->lock);
		ro->lock = l;
		ro->lock_gen = fork_generation;
	}
	if (!PyThread_acquire_lock(ro->lock, NOWAIT_LOCK)) {
		Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(ro->lock,
							     WAIT_LOCK);
		Py_END_ALLOW_THREADS
	}
	return 0;
}

static void
redis_unlock(RedisObject *ro)
{
	PyThread_release_lock(ro->lock);
}

/* Takes the lock of the Redis object attached to o now, and returns it
 * with a reference (NULL: none attached; *err set on MemoryError).  Another
 * thread may attach another one while this one waits: then it tries
 * again. */
static RedisObject *
table_lock_redis(TableObject *o, int *err)
{
	RedisObject *ro;

	*err = 0;
	while ((ro = o->redis) != NULL) {
		Py_INCREF(ro);
		if (redis_lock(ro) < 0) {
			Py_DECREF(ro);
			*err = 1;
			return NULL;
		}
		if (o->redis == ro)
			return ro;
		redis_unlock(ro);
		Py_DECREF(ro);
	}
	return NULL;
}

static void
table_release_redis(RedisObject *ro)
{
	if (ro) {
		redis_unlock(ro);
		Py_DECREF(ro);
	}
}

/* Links o into ro's list, with the reference o holds. */
static void
redis_link(RedisObject *ro, TableObject *o)
{
	o->redis = (RedisObject *)Py_NewRef(ro);
	o->rprev = NULL;
	o->rnext = ro->tables;
	if (ro->tables)
		ro->tables->rprev = o;
	ro->tables = o;
}

/* Unlinks o from its Redis object's list and drops its reference (the C
 * table is detached, or closed, by the caller). */
static void
redis_unlink(TableObject *o)
{
	RedisObject *ro = o->redis;

	if (!ro)
		return;
	if (o->rprev)
		o->rprev->rnext = o->rnext;
	else
		ro->tables = o->rnext;
	if (o->rnext)
		o->rnext->rprev = o->rprev;
	o->rnext = o->rprev = NULL;
	o->redis = NULL;
	Py_DECREF(ro);
}

/* An address list: None (none), a str "h:p,h:p", or a list or tuple of
 * "h:p" strings, joined with commas into *out (a new str, or NULL).  An
 * empty one is EINVAL: it would silently mean "no cluster". */
static int
address_list(module_state *st, const char *what, PyObject *v, PyObject **out)
{
	*out = NULL;
	if (v == Py_None)
		return 0;
	if (PyList_Check(v) || PyTuple_Check(v)) {
		PyObject *comma = PyUnicode_FromString(",");

		if (!comma)
			return -1;
		*out = PyUnicode_Join(comma, v); /* TypeError if not str */
		Py_DECREF(comma);
		if (!*out)
			return -1;
	} else if (PyUnicode_Check(v)) {
		*out = Py_NewRef(v);
	} else {
		PyErr_Format(PyExc_TypeError,
			     "%s must be a str \"host:port,host:port\" or a "
			     "list of \"host:port\" strings, not %.100s",
			     what, Py_TYPE(v)->tp_name);
		return -1;
	}
	if (PyUnicode_GET_LENGTH(*out) == 0) {
		char msg[96];

		Py_CLEAR(*out);
		snprintf(msg, sizeof msg, "%s names no server", what);
		raise_code(st, TKSHM_EINVAL, msg);
		return -1;
	}
	return 0;
}

/* The constructor's arguments that need more than PyArg's formats. */
struct redis_args {
	const char *host, *unix_path, *username, *password, *master;
	PyObject *port, *cluster, *sentinels; /* borrowed */
	PyObject *cluster_s, *sentinels_s;    /* joined, or NULL */
	long failures;
	int server_time;
};

/* s as UTF-8 without a NUL byte (which would cut it short in C), or NULL
 * with ValueError. */
static const char *
utf8_no_nul(PyObject *s)
{
	Py_ssize_t n;
	const char *p = s ? PyUnicode_AsUTF8AndSize(s, &n) : NULL;

	if (p && (size_t)n != strlen(p)) {
		PyErr_SetString(PyExc_ValueError, "embedded null character");
		return NULL;
	}
	return p;
}

/* What the library would only say as EINVAL, said with the option's name
 * (and rules the library leaves implicit: port 0 is its default 6379,
 * which a caller who writes port=0 did not mean). */
static const char *
redis_args_problem(const struct redis_args *a)
{
	long port;

	if (a->port != Py_None) {
		port = PyLong_AsLong(a->port);
		if (port < 1 || port > 65535)
			return "port must be 1 to 65535";
	}
	if (a->cluster_s && a->sentinels_s)
		return "cluster and sentinels are exclusive";
	if (!a->sentinels_s != !a->master)
		return "sentinels and sentinel_master go together";
	if ((a->cluster_s || a->sentinels_s) &&
	    (a->host || a->unix_path || a->port != Py_None))
		return "cluster or sentinels name the servers: no host, port "
		       "or unix_path with them";
	if (a->host && a->unix_path)
		return "host or unix_path, not both";
	if (a->failures < 0 || (unsigned long)a->failures > UINT_MAX)
		return "breaker_failures must be 0 (the default, 3) to "
		       "4294967295";
	return NULL;
}

/* How repr() names the servers (never a password). */
static PyObject *
redis_where(const struct redis_args *a, const tkshm_redis_options *o)
{
	if (a->cluster_s)
		return PyUnicode_FromFormat("cluster=%U", a->cluster_s);
	if (a->sentinels_s)
		return PyUnicode_FromFormat("sentinels=%U master=%s",
					    a->sentinels_s, a->master);
	if (o->unix_path)
		return PyUnicode_FromFormat("unix:%s", o->unix_path);
	return PyUnicode_FromFormat("%s:%d", o->host ? o->host : "127.0.0.1",
				    o->port ? o->port : 6379);
}

/* Fills *o from *a, or raises (-1). */
static int
redis_options_of(module_state *st, struct redis_args *a, tkshm_redis_options *o)
{
	const char *problem;

	if (a->port != Py_None && !PyLong_Check(a->port)) {
		PyErr_Format(PyExc_TypeError,
			     "port must be an int or None, not %.100s",
			     Py_TYPE(a->port)->tp_name);
		return -1;
	}
	if (address_list(st, "cluster", a->cluster, &a->cluster_s) < 0 ||
	    address_list(st, "sentinels", a->sentinels, &a->sentinels_s) < 0)
		return -1;
	problem = redis_args_problem(a);
	if (PyErr_Occurred()) /* a port too large for a C long */
		return -1;
	if (problem) {
		raise_code(st, TKSHM_EINVAL, problem);
		return -1;
	}
	if ((a->cluster_s && !(o->cluster = utf8_no_nul(a->cluster_s))) ||
	    (a->sentinels_s && !(o->sentinels = utf8_no_nul(a->sentinels_s))))
		return -1;
	o->host = a->host;
	o->port = a->port == Py_None ? 0 : (int)PyLong_AsLong(a->port);
	o->unix_path = a->unix_path;
	o->username = a->username;
	o->password = a->password;
	o->sentinel_master = a->master;
	o->breaker_failures = (unsigned)a->failures;
	o->server_time = a->server_time != 0;
	return 0;
}

static int
redis_init(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "host",
				  "port",
				  "unix_path",
				  "username",
				  "password",
				  "db",
				  "cluster",
				  "sentinels",
				  "sentinel_master",
				  "connect_timeout_ms",
				  "command_timeout_ms",
				  "breaker_failures",
				  "breaker_open_ms",
				  "server_time",
				  NULL };
	RedisObject *o = (RedisObject *)self;
	module_state *st = state_of_type(Py_TYPE(self));
	struct redis_args a = { .port = Py_None,
				.cluster = Py_None,
				.sentinels = Py_None,
				.failures = 0,
				.server_time = 1 };
	tkshm_redis_options ro = TKSHM_REDIS_OPTIONS_INIT;
	tkshm_redis *r = NULL;
	int rc = -1;

	if (!st)
		return -1;
	if (!PyArg_ParseTupleAndKeywords(
		    args, kwds, "|$zOzzziOOzddldp:Redis", kwlist, &a.host,
		    &a.port, &a.unix_path, &a.username, &a.password, &ro.db,
		    &a.cluster, &a.sentinels, &a.master, &ro.connect_timeout_ms,
		    &ro.command_timeout_ms, &a.failures, &ro.breaker_open_ms,
		    &a.server_time))
		return -1;
	if (o->r || o->where) {
		PyErr_SetString(PyExc_RuntimeError,
				"tkshm.Redis is already initialised");
		return -1;
	}
	if (redis_options_of(st, &a, &ro) < 0)
		goto out;
	/* No I/O here: the handle connects on its first use, in the
	 * process that uses it. */
	rc = tk_py_redis_open(&ro, &r);
	if (rc != TKSHM_OK) {
		raise_code(st, rc,
			   rc == TKSHM_ENOTSUP ?
				   "tkshm was built without its Redis tier "
				   "(build it with libhiredis-dev installed)" :
				   NULL);
		rc = -1;
		goto out;
	}
	o->where = redis_where(&a, &ro);
	if (!o->where) {
		tk_py_redis_close(r);
		rc = -1;
		goto out;
	}
	o->r = r;
	rc = 0;
out:
	Py_XDECREF(a.cluster_s);
	Py_XDECREF(a.sentinels_s);
	return rc;
}

static PyObject *
redis_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
	RedisObject *o = (RedisObject *)PyType_GenericNew(tp, args, kwds);

	if (!o)
		return NULL;
	o->lock = PyThread_allocate_lock();
	if (!o->lock) {
		Py_DECREF(o);
		return PyErr_NoMemory();
	}
	o->lock_gen = fork_generation;
	return (PyObject *)o;
}

/* Detaches every table attached (their checks then raise ENOREDIS until
 * they are attached again), then closes the handle. */
static PyObject *
redis_close(PyObject *self, PyObject *unused)
{
	RedisObject *o = (RedisObject *)self;

	(void)unused;
	if (!o->r)
		Py_RETURN_NONE;
	if (redis_lock(o) < 0)
		return NULL;
	while (o->tables) {
		TableObject *t = o->tables;

		if (t->t && tk_py_redis_attach(t->t, NULL) != TKSHM_OK)
			o->keep_handle = 1;
		redis_unlink(t); /* self stays alive: the caller holds it */
	}
	if (o->r && !o->keep_handle)
		tk_py_redis_close(o->r);
	o->r = NULL;
	redis_unlock(o);
	Py_RETURN_NONE;
}

static void
redis_dealloc(PyObject *self)
{
	RedisObject *o = (RedisObject *)self;
	PyTypeObject *tp = Py_TYPE(self);

	/* No table is attached: each holds a reference. */
	if (o->r && !o->keep_handle)
		tk_py_redis_close(o->r);
	if (o->lock)
		PyThread_free_lock(o->lock);
	Py_CLEAR(o->where);
	tp->tp_free(self);
	Py_DECREF(tp);
}

static PyObject *
redis_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (!((RedisObject *)self)->r) {
		PyErr_SetString(PyExc_ValueError,
				"operation on a closed tkshm.Redis");
		return NULL;
	}
	return Py_NewRef(self);
}

static PyObject *
redis_exit(PyObject *self, PyObject *args)
{
	(void)args;
	return redis_close(self, NULL);
}

static PyObject *
redis_get_closed(PyObject *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(((RedisObject *)self)->r == NULL);
}

static PyObject *
redis_repr(PyObject *self)
{
	RedisObject *o = (RedisObject *)self;

	if (!o->r || !o->where)
		return PyUnicode_FromString("<tkshm.Redis closed>");
	return PyUnicode_FromFormat("<tkshm.Redis %U>", o->where);
}

static PyMethodDef redis_methods[] = {
	{ "close", redis_close, METH_NOARGS,
	  "close($self, /)\n--\n\nDetaches every table attached to it "
	  "(their checks then raise ENOREDIS until attached again) and closes "
	  "this process's connection.  Twice is fine." },
	{ "__enter__", redis_enter, METH_NOARGS, NULL },
	{ "__exit__", redis_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef redis_getset[] = {
	{ "closed", redis_get_closed, NULL, "True once closed", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyType_Slot redis_slots[] = {
	{ Py_tp_doc,
	  "Redis(*, host=None, port=None, unix_path=None, username=None, "
	  "password=None, db=0, cluster=None, sentinels=None, "
	  "sentinel_master=None, connect_timeout_ms=0, "
	  "command_timeout_ms=0, breaker_failures=0, breaker_open_ms=0, "
	  "server_time=True)\n--\n\n"
	  "A connection handle for strict tables (Table.attach, "
	  "Table(redis=...)).  host None is 127.0.0.1, port None 6379; "
	  "cluster and sentinels take \"host:port,host:port\" or a list of "
	  "\"host:port\" strings (sentinels with sentinel_master); 0 for a "
	  "timeout or the breaker is the library's default (200 ms, 100 ms, "
	  "3 failures, 1000 ms).  Bad options raise tkshm.Error (EINVAL).  "
	  "It connects on first use, in the process that uses it: a forked "
	  "child gets its own connection.  One thread uses it at a time: "
	  "checks of tables attached to one Redis take turns on its lock "
	  "(other threads run meanwhile)." },
	{ Py_tp_new, redis_new },
	{ Py_tp_init, redis_init },
	{ Py_tp_dealloc, redis_dealloc },
	{ Py_tp_methods, redis_methods },
	{ Py_tp_getset, redis_getset },
	{ Py_tp_repr, redis_repr },
	{ 0, NULL },
};

static PyType_Spec redis_spec = {
	.name = "tkshm.Redis",
	.basicsize = sizeof(RedisObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
	.slots = redis_slots,
};

/* ------------------------------------------------------------------------
 * Table
 * ---------------------------------------------------------------------- */

/* Set in a child after a fork() of a process that imported the module: an
 * anonymous table created there is private to that child (table_init).
 * pthread_atfork rather than os.register_at_fork: it also sees the fork()s
 * of servers written in C (uWSGI) and of C extensions. */
static volatile sig_atomic_t forked_since_import;

static void
mark_forked(void)
{
	forked_since_import = 1;
	fork_generation++;
}

/* Reads up to len bytes of the auxiliary vector of pid (0: this process);
 * returns the length, or -1 (no /proc, or the parent is another user's). */
static ssize_t
read_auxv(pid_t pid, unsigned char *buf, size_t len)
{
	char path[64];
	ssize_t n, got = 0;
	int fd;

	if (pid)
		snprintf(path, sizeof path, "/proc/%ld/auxv", (long)pid);
	else
		snprintf(path, sizeof path, "/proc/self/auxv");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((size_t)got < len &&
	       (n = read(fd, buf + got, len - (size_t)got)) > 0)
		got += n;
	close(fd);
	return got;
}

/* True when address-space randomisation is on for this process: without
 * it, two execs of one program can have equal auxiliary vectors. */
static int
aslr_on(void)
{
	char c = '0';
	int fd = open("/proc/sys/kernel/randomize_va_space",
		      O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (read(fd, &c, 1) != 1)
		c = '0';
	close(fd);
	return c != '0' && !(personality(0xffffffff) & ADDR_NO_RANDOMIZE);
}

/* True when this process is a fork() of its (living) parent that has not
 * exec'd since: a gunicorn worker without --preload, a uWSGI lazy-apps
 * worker, which import tkshm only after the fork, so mark_forked never
 * ran.  fork() copies the auxiliary vector (the addresses exec chose at
 * random: the stack's random bytes, the program name); exec makes a new
 * one.  An orphan (parent 1), a parent of another user (unreadable) or no
 * ASLR: not detected, never a false alarm. */
static int
forked_from_parent(void)
{
	unsigned char mine[1024], theirs[sizeof mine];
	pid_t ppid = getppid();
	ssize_t a, b;

	if (ppid <= 1 || !aslr_on())
		return 0;
	a = read_auxv(0, mine, sizeof mine);
	b = read_auxv(ppid, theirs, sizeof theirs);
	return a > 0 && a == b && memcmp(mine, theirs, (size_t)a) == 0;
}

/* True when this is a child of Python's multiprocessing (uvicorn
 * --workers spawns its workers so): multiprocessing.parent_process(). */
static int
multiprocessing_child(void)
{
	PyObject *name = PyUnicode_FromString("multiprocessing");
	PyObject *mp, *parent;
	int child;

	if (!name) {
		PyErr_Clear();
		return 0;
	}
	mp = PyImport_GetModule(name); /* NULL: never imported, no child */
	Py_DECREF(name);
	PyErr_Clear();
	if (!mp)
		return 0;
	parent = PyObject_CallMethod(mp, "parent_process", NULL);
	Py_DECREF(mp);
	if (!parent) {
		PyErr_Clear();
		return 0;
	}
	child = parent != Py_None;
	Py_DECREF(parent);
	return child;
}

/* Raises the error of an anonymous table created in a worker, where this
 * process is one (-1), else 0.  An anonymous mapping is shared only with
 * the processes forked after it: made in each worker, it is one table per
 * worker, and a limit of N admits N times the workers. */
static int
refuse_private_anonymous(void)
{
	static const char fix[] =
		": name a table file (tkshm.Table(path, ...), or the "
		"middleware's default table), or create it before the "
		"workers fork (gunicorn --preload); private=True if one "
		"table per process is what you want";

	if (forked_since_import || forked_from_parent()) {
		PyErr_Format(PyExc_RuntimeError,
			     "an anonymous table created after fork() is "
			     "private to this worker process, so each worker "
			     "would have its own limit%s",
			     fix);
		return -1;
	}
	if (multiprocessing_child()) {
		PyErr_Format(PyExc_RuntimeError,
			     "an anonymous table created in a multiprocessing "
			     "child (uvicorn --workers) is private to this "
			     "worker process, so each worker would have its "
			     "own limit%s",
			     fix);
		return -1;
	}
	return 0;
}

/* A tkshm.Change (a named tuple) of a tkshm_change. */
static PyObject *
change_new(module_state *st, const tkshm_change *c)
{
	PyObject *o = PyStructSequence_New(st->change_type);
	PyObject *v[5];
	Py_ssize_t i;

	if (!o)
		return NULL;
	v[0] = PyUnicode_FromString(tkshm_change_name(c->kind));
	v[1] = PyBool_FromLong(c->states_kept);
	v[2] = PyLong_FromUnsignedLongLong(c->slots_before);
	v[3] = PyLong_FromUnsignedLongLong(c->slots_after);
	v[4] = PyUnicode_FromString(c->text);
	for (i = 0; i < 5; i++) {
		if (!v[i]) {
			Py_DECREF(o); /* frees the fields already set */
			for (i++; i < 5; i++)
				Py_XDECREF(v[i]);
			return NULL;
		}
		PyStructSequence_SET_ITEM(o, i, v[i]);
	}
	return o;
}

static PyStructSequence_Field change_fields[] = {
	{ "kind", "'none', 'create', 'in_place' or 'replace'" },
	{ "states_kept", "every key kept (or carried over) its state" },
	{ "slots_before", "the table's slots before (0: there was none)" },
	{ "slots_after", "the table's slots after" },
	{ "text", "a sentence, e.g. 'limit 20 -> 40, states kept'" },
	{ NULL, NULL },
};

static PyStructSequence_Desc change_desc = {
	"tkshm.Change",
	"What opening a table, Table.apply() or tkshm.plan() did (or would "
	"do) to it: a named tuple (kind, states_kept, slots_before, "
	"slots_after, text).",
	change_fields,
	5,
};

/* An int >= 0 (OverflowError if negative or too large). */
static int
u64_converter(PyObject *o, void *out)
{
	unsigned long long v;

	if (!PyLong_Check(o)) {
		PyErr_Format(PyExc_TypeError, "expected an int, not %.100s",
			     Py_TYPE(o)->tp_name);
		return 0;
	}
	v = PyLong_AsUnsignedLongLong(o);
	if (v == (unsigned long long)-1 && PyErr_Occurred())
		return 0;
	*(unsigned long long *)out = v;
	return 1;
}

#define NOT_STRICT                                                      \
	"only a strict table (a policy with \";mode=strict\") takes a " \
	"Redis connection"

/* redis: None, or an open tkshm.Redis; else TypeError or ValueError. */
static int
redis_arg(module_state *st, PyObject *redis)
{
	if (redis == Py_None)
		return 0;
	if (!PyObject_TypeCheck(redis, st->redis_type)) {
		PyErr_Format(PyExc_TypeError,
			     "redis must be a tkshm.Redis or None, not %.100s",
			     Py_TYPE(redis)->tp_name);
		return -1;
	}
	if (!((RedisObject *)redis)->r) {
		PyErr_SetString(PyExc_ValueError,
				"operation on a closed tkshm.Redis");
		return -1;
	}
	return 0;
}

/* Attaches redis (None: detaches) to o's open table, in the library and
 * here, with the lock of the Redis object attached before held so that no
 * check is using it meanwhile.  Raises (-1): ENOTSUP when the table is not
 * strict; ValueError when o or redis was closed meanwhile. */
static int
table_set_redis(module_state *st, TableObject *o, PyObject *redis)
{
	RedisObject *nr = redis == Py_None ? NULL : (RedisObject *)redis;
	RedisObject *old;
	int err, rc;

	old = table_lock_redis(o, &err);
	if (err)
		return -1;
	/* Checked again: the GIL was released while waiting. */
	if (!o->t || redis_arg(st, redis) < 0) {
		if (!o->t)
			PyErr_SetString(PyExc_ValueError,
					"operation on a closed tkshm.Table");
		table_release_redis(old);
		return -1;
	}
	if (nr == old) { /* already so (a detach of nothing included) */
		table_release_redis(old);
		return 0;
	}
	rc = tk_py_redis_attach(o->t, nr ? nr->r : NULL);
	if (rc == TKSHM_OK) {
		redis_unlink(o);
		if (nr)
			redis_link(nr, o);
	}
	table_release_redis(old);
	if (rc != TKSHM_OK) {
		raise_code(st, rc,
			   rc == TKSHM_ENOTSUP && nr ? NOT_STRICT : NULL);
		return -1;
	}
	return 0;
}

/* o->policy: the canonical policy of o's table just opened. */
static int
table_read_policy(module_state *st, TableObject *o)
{
	char buf[TKSHM_POLICY_MAX];
	tkshm_stats stats;
	int rc;

	rc = tkshm_stats_get(o->t, &stats);
	if (rc == TKSHM_OK)
		rc = tkshm_policy_format(&stats.policy, buf, sizeof(buf));
	if (rc < 0) {
		raise_code(st, rc, NULL);
		return -1;
	}
	Py_XSETREF(o->policy, PyUnicode_FromStringAndSize(buf, rc));
	return o->policy ? 0 : -1;
}

static int
table_init(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "path", "policy",  "slots", "create", "mode",
				  "keep", "private", "redis", NULL };
	TableObject *o = (TableObject *)self;
	module_state *st = state_of_type(Py_TYPE(self));
	PyObject *path_obj = Py_None;
	PyObject *path_bytes = NULL;
	const char *policy_str = NULL;
	unsigned long long slots = 0;
	int create = 1, keep = 0, private_ok = 0;
	unsigned long long mode = 0600;
	PyObject *redis = Py_None;
	tkshm_options opts = TKSHM_OPTIONS_INIT;
	tkshm_policy pol;
	tkshm_table *t = NULL;
	char err[256] = "";
	int rc;

	if (!st)
		return -1;
	if (!PyArg_ParseTupleAndKeywords(
		    args, kwds, "O|zO&pO&pp$O:Table", kwlist, &path_obj,
		    &policy_str, u64_converter, &slots, &create, u64_converter,
		    &mode, &keep, &private_ok, &redis) ||
	    redis_arg(st, redis) < 0)
		return -1;
	/* A worker that creates an anonymous table after the fork has one
	 * of its own: a limit "shared" that way is one per worker. */
	if (path_obj == Py_None && !private_ok && refuse_private_anonymous())
		return -1;
	/* Bits outside 0o777 (setuid, setgid, sticky) are refused here as
	 * tkshm_open refuses them, with the mode in the message. */
	if (mode > 0777) {
		char msg[160]; /* PyErr_Format has no %o */

		snprintf(msg, sizeof msg,
			 "mode 0o%llo has bits outside 0o777: a table file "
			 "takes permission bits only (0 to 0o777; 0 is 0o600)",
			 mode);
		PyErr_SetString(PyExc_ValueError, msg);
		return -1;
	}
	if (o->t) {
		PyErr_SetString(PyExc_RuntimeError,
				"tkshm.Table is already open");
		return -1;
	}
	if (path_obj != Py_None &&
	    !PyUnicode_FSConverter(path_obj, &path_bytes))
		return -1;
	if (policy_str) {
		rc = tkshm_policy_parse(policy_str, &pol, err, sizeof(err));
		if (rc != TKSHM_OK) {
			Py_XDECREF(path_bytes);
			raise_code(st, rc, err);
			return -1;
		}
		opts.policy = &pol;
	}
	/* Refused before anything is created (the open would be undone). */
	if (redis != Py_None && policy_str &&
	    pol.global.mode != TKSHM_MODE_STRICT) {
		Py_XDECREF(path_bytes);
		raise_code(st, TKSHM_ENOTSUP, NOT_STRICT);
		return -1;
	}
	opts.slots = slots;
	opts.mode = (uint32_t)mode;
	opts.flags = (create ? TKSHM_O_CREATE : 0) | (keep ? TKSHM_O_KEEP : 0);
	opts.change = &o->change;
	opts.errbuf = err;
	opts.errbuf_len = sizeof(err);
	rc = tkshm_open(path_bytes ? PyBytes_AS_STRING(path_bytes) : NULL,
			&opts, &t);
	Py_XDECREF(path_bytes);
	if (rc != TKSHM_OK) {
		raise_code(st, rc, err);
		return -1;
	}
	o->t = t;
	/* A table that cannot take it (not strict: ENOTSUP) is not kept. */
	if (table_read_policy(st, o) < 0 ||
	    (redis != Py_None && table_set_redis(st, o, redis) < 0)) {
		tkshm_close(t);
		o->t = NULL;
		return -1;
	}
	return 0;
}

static void
table_dealloc(PyObject *self)
{
	TableObject *o = (TableObject *)self;
	PyTypeObject *tp = Py_TYPE(self);

	PyObject_GC_UnTrack(self);
	/* No other thread can be checking it (none holds a reference), so
	 * its Redis object's lock is not needed. */
	if (o->t)
		tkshm_close(o->t);
	o->t = NULL;
	redis_unlink(o);
	Py_CLEAR(o->policy);
	tp->tp_free(self);
	Py_DECREF(tp);
}

static int
table_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(Py_TYPE(self));
	Py_VISIT(((TableObject *)self)->redis);
	return 0;
}

static tkshm_table *
table_handle(TableObject *o)
{
	if (!o->t)
		PyErr_SetString(PyExc_ValueError,
				"operation on a closed tkshm.Table");
	return o->t;
}

/* A key is str (as UTF-8) or bytes. */
static int
key_of(PyObject *key, const char **p, Py_ssize_t *len)
{
	if (PyUnicode_Check(key)) {
		*p = PyUnicode_AsUTF8AndSize(key, len);
		return *p ? 0 : -1;
	}
	if (PyBytes_Check(key)) {
		*p = PyBytes_AS_STRING(key);
		*len = PyBytes_GET_SIZE(key);
		return 0;
	}
	PyErr_Format(PyExc_TypeError, "key must be str or bytes, not %.100s",
		     Py_TYPE(key)->tp_name);
	return -1;
}

/* now_ms: None (the system clock) or a number. */
static int
now_of(PyObject *now, double *out, int *given)
{
	*given = 0;
	if (!now || now == Py_None)
		return 0;
	if (!PyFloat_Check(now) && !PyLong_Check(now)) {
		PyErr_Format(PyExc_TypeError,
			     "now_ms must be a number or None, not %.100s",
			     Py_TYPE(now)->tp_name);
		return -1;
	}
	*out = PyFloat_AsDouble(now);
	if (*out == -1.0 && PyErr_Occurred())
		return -1;
	*given = 1;
	return 0;
}

/* One check or peek, as table_call runs it. */
struct table_op {
	int peek;
	const char *key;
	size_t len;
	double cost, now;
	int given; /* now was passed */
	tkshm_decision d;
};

static int
table_op_run(tkshm_table *t, struct table_op *op)
{
	if (op->peek)
		return op->given ? tkshm_peek_at(t, op->key, op->len, op->now,
						 &op->d) :
				   tkshm_peek(t, op->key, op->len, &op->d);
	return op->given ? tkshm_check_at(t, op->key, op->len, op->cost,
					  op->now, &op->d) :
			   tkshm_check(t, op->key, op->len, op->cost, &op->d);
}

/* Not a library code: table_call raised a Python exception. */
#define TK_PY_RAISED 1

/* Runs op on o's table.  No Redis object attached: under the GIL, as
 * every other call (see the top of the file).  One attached: with its lock
 * held (a tkshm_redis serves one thread at a time) and the GIL released,
 * as the exchange waits on the network.  Returns the library's code, or
 * TK_PY_RAISED. */
static int
table_call(TableObject *o, struct table_op *op)
{
	RedisObject *ro;
	tkshm_table *t;
	int err, rc;

	ro = table_lock_redis(o, &err);
	if (err)
		return TK_PY_RAISED;
	t = table_handle(o); /* closed while this thread waited? */
	if (!t) {
		table_release_redis(ro);
		return TK_PY_RAISED;
	}
	if (!ro)
		return table_op_run(t, op);
	Py_BEGIN_ALLOW_THREADS rc = table_op_run(t, op);
	Py_END_ALLOW_THREADS table_release_redis(ro);
	return rc;
}

static PyObject *
table_check(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "key", "cost", "now_ms", NULL };
	module_state *st = state_of_type(Py_TYPE(self));
	PyObject *key;
	PyObject *cost_obj = NULL;
	PyObject *now_obj = NULL;
	double cost = 1.0;
	struct table_op op = { 0 };
	const char *k;
	Py_ssize_t klen;
	int rc;

	if (!st ||
	    !PyArg_ParseTupleAndKeywords(args, kwds, "O|OO:check", kwlist, &key,
					 &cost_obj, &now_obj))
		return NULL;
	if (!table_handle((TableObject *)self) || key_of(key, &k, &klen) < 0 ||
	    now_of(now_obj, &op.now, &op.given) < 0)
		return NULL;
	if (cost_obj) {
		if (!PyFloat_Check(cost_obj) && !PyLong_Check(cost_obj)) {
			PyErr_Format(PyExc_TypeError,
				     "cost must be a number, not %.100s",
				     Py_TYPE(cost_obj)->tp_name);
			return NULL;
		}
		cost = PyFloat_AsDouble(cost_obj);
		if (cost == -1.0 && PyErr_Occurred())
			return NULL;
	}
	op.key = k;
	op.len = (size_t)klen;
	op.cost = cost;
	rc = table_call((TableObject *)self, &op);
	if (rc == TK_PY_RAISED)
		return NULL;
	if (rc != TKSHM_OK)
		return raise_code(st, rc, NULL);
	return decision_new(st, &op.d);
}

static PyObject *
table_peek(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "key", "now_ms", NULL };
	module_state *st = state_of_type(Py_TYPE(self));
	PyObject *key;
	PyObject *now_obj = NULL;
	struct table_op op = { .peek = 1 };
	const char *k;
	Py_ssize_t klen;
	int rc;

	if (!st || !PyArg_ParseTupleAndKeywords(args, kwds, "O|O:peek", kwlist,
						&key, &now_obj))
		return NULL;
	if (!table_handle((TableObject *)self) || key_of(key, &k, &klen) < 0 ||
	    now_of(now_obj, &op.now, &op.given) < 0)
		return NULL;
	op.key = k;
	op.len = (size_t)klen;
	rc = table_call((TableObject *)self, &op);
	if (rc == TK_PY_RAISED)
		return NULL;
	if (rc != TKSHM_OK)
		return raise_code(st, rc, NULL);
	return decision_new(st, &op.d);
}

static PyObject *
table_reset(PyObject *self, PyObject *key)
{
	module_state *st = state_of_type(Py_TYPE(self));
	const char *k;
	Py_ssize_t klen;
	tkshm_table *t;
	int rc;

	if (!st)
		return NULL;
	t = table_handle((TableObject *)self);
	if (!t || key_of(key, &k, &klen) < 0)
		return NULL;
	rc = tkshm_reset(t, k, (size_t)klen);
	if (rc != TKSHM_OK)
		return raise_code(st, rc, NULL);
	Py_RETURN_NONE;
}

static int
put_u64(PyObject *d, const char *name, uint64_t v)
{
	PyObject *o = PyLong_FromUnsignedLongLong(v);
	int rc;

	if (!o)
		return -1;
	rc = PyDict_SetItemString(d, name, o);
	Py_DECREF(o);
	return rc;
}

static int
put_obj(PyObject *d, const char *name, PyObject *o)
{
	int rc;

	if (!o)
		return -1;
	rc = PyDict_SetItemString(d, name, o);
	Py_DECREF(o);
	return rc;
}

/* stats()["global"]: the cross-host tier's counters (zero for local
 * tables). */
static PyObject *
global_stats(const tkshm_stats *s)
{
	PyObject *g = PyDict_New();

	if (!g)
		return NULL;
	if (put_u64(g, "redis_calls", s->global.redis_calls) < 0 ||
	    put_u64(g, "redis_errors", s->global.redis_errors) < 0 ||
	    put_u64(g, "noscript_reloads", s->global.noscript_reloads) < 0 ||
	    put_u64(g, "breaker_opens", s->global.breaker_opens) < 0 ||
	    put_u64(g, "cache_denials", s->global.cache_denials) < 0 ||
	    put_u64(g, "fallback_allowed", s->global.fallback_allowed) < 0 ||
	    put_u64(g, "fallback_denied", s->global.fallback_denied) < 0 ||
	    put_u64(g, "no_lease", s->global.no_lease) < 0 ||
	    put_u64(g, "leases", s->global.leases) < 0 ||
	    put_u64(g, "lease_units", s->global.lease_units) < 0 ||
	    put_u64(g, "lease_round_trips", s->global.lease_round_trips) < 0 ||
	    put_u64(g, "lease_units_expired", s->global.lease_units_expired) <
		    0 ||
	    put_u64(g, "hosts", s->global.hosts) < 0 ||
	    put_obj(g, "redis_up", PyBool_FromLong(s->global.redis_up)) < 0 ||
	    put_obj(g, "agent_pid", PyLong_FromLongLong(s->global.agent_pid)) <
		    0 ||
	    put_obj(g, "agent_beat_ms",
		    PyFloat_FromDouble(s->global.agent_beat_ms)) < 0) {
		Py_DECREF(g);
		return NULL;
	}
	return g;
}

static PyObject *
table_stats(PyObject *self, PyObject *unused)
{
	TableObject *o = (TableObject *)self;
	module_state *st = state_of_type(Py_TYPE(self));
	tkshm_table *t;
	tkshm_stats s;
	PyObject *d;
	int rc;

	(void)unused;
	if (!st)
		return NULL;
	t = table_handle(o);
	if (!t)
		return NULL;
	rc = tkshm_stats_get(t, &s);
	if (rc != TKSHM_OK)
		return raise_code(st, rc, NULL);
	d = PyDict_New();
	if (!d)
		return NULL;
	if (put_u64(d, "allowed", s.allowed) < 0 ||
	    put_u64(d, "denied", s.denied) < 0 ||
	    put_u64(d, "inserts", s.inserts) < 0 ||
	    put_u64(d, "reclaims", s.reclaims) < 0 ||
	    put_u64(d, "evictions", s.evictions) < 0 ||
	    put_u64(d, "evictions_in_debt", s.evictions_in_debt) < 0 ||
	    put_u64(d, "debt_restores", s.debt_restores) < 0 ||
	    put_u64(d, "cas_retries", s.cas_retries) < 0 ||
	    put_u64(d, "refusals", s.refusals) < 0 ||
	    put_u64(d, "duplicates_killed", s.duplicates_killed) < 0 ||
	    put_u64(d, "resets", s.resets) < 0 ||
	    put_u64(d, "multi_rollbacks", s.multi_rollbacks) < 0 ||
	    put_u64(d, "claims_stolen", s.claims_stolen) < 0 ||
	    put_u64(d, "releases", s.releases) < 0 ||
	    put_u64(d, "reaped", s.reaped) < 0 ||
	    put_u64(d, "slots", s.slots) < 0 ||
	    put_u64(d, "buckets", s.buckets) < 0 ||
	    put_u64(d, "debt_cells", s.debt_cells) < 0 ||
	    put_u64(d, "file_bytes", s.file_bytes) < 0 ||
	    put_obj(d, "bytes_per_key", PyFloat_FromDouble(s.bytes_per_key)) <
		    0 ||
	    put_obj(d, "created_ms", PyFloat_FromDouble(s.created_ms)) < 0 ||
	    put_u64(d, "layout_version", s.layout_version) < 0 ||
	    put_obj(d, "on_full",
		    PyUnicode_FromString(s.on_full == TKSHM_ON_FULL_REFUSE ?
						 "refuse" :
						 "evict")) < 0 ||
	    put_obj(d, "anonymous", PyBool_FromLong(s.anonymous)) < 0 ||
	    PyDict_SetItemString(d, "policy", o->policy) < 0 ||
	    put_obj(d, "global", global_stats(&s)) < 0) {
		Py_DECREF(d);
		return NULL;
	}
	return d;
}

/* Under its Redis object's lock, if one is attached: another thread may be
 * checking it with the GIL released. */
static PyObject *
table_close(PyObject *self, PyObject *unused)
{
	TableObject *o = (TableObject *)self;
	RedisObject *ro;
	int err;

	(void)unused;
	ro = table_lock_redis(o, &err);
	if (err)
		return NULL;
	if (o->t)
		tkshm_close(o->t);
	o->t = NULL;
	redis_unlink(o);
	table_release_redis(ro);
	Py_RETURN_NONE;
}

static PyObject *
table_attach(PyObject *self, PyObject *redis)
{
	module_state *st = state_of_type(Py_TYPE(self));

	if (!st || !table_handle((TableObject *)self) ||
	    redis_arg(st, redis) < 0 ||
	    table_set_redis(st, (TableObject *)self, redis) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *
table_get_redis(PyObject *self, void *closure)
{
	RedisObject *ro = ((TableObject *)self)->redis;

	(void)closure;
	return Py_NewRef(ro ? (PyObject *)ro : Py_None);
}

static PyObject *
table_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (!table_handle((TableObject *)self))
		return NULL;
	return Py_NewRef(self);
}

static PyObject *
table_exit(PyObject *self, PyObject *args)
{
	(void)args;
	return table_close(self, NULL);
}

/* The table's policy now: another process may have changed it since the
 * open (docs/lifecycle.md). */
static PyObject *
table_get_policy(PyObject *self, void *closure)
{
	TableObject *o = (TableObject *)self;
	tkshm_stats s;
	char buf[TKSHM_POLICY_MAX];
	int n;

	(void)closure;
	if (!o->t) {
		PyErr_SetString(PyExc_ValueError, "tkshm.Table is not open");
		return NULL;
	}
	if (tkshm_stats_get(o->t, &s) != TKSHM_OK ||
	    (n = tkshm_policy_format(&s.policy, buf, sizeof buf)) < 0)
		return Py_NewRef(o->policy);
	return PyUnicode_FromStringAndSize(buf, n);
}

static PyObject *
table_get_change(PyObject *self, void *closure)
{
	module_state *st = state_of_type(Py_TYPE(self));

	(void)closure;
	return st ? change_new(st, &((TableObject *)self)->change) : NULL;
}

/* A policy string argument (None: keep the table's) parsed into *pol. */
static int
policy_arg(module_state *st, const char *s, tkshm_policy *pol,
	   const tkshm_policy **out)
{
	char err[256] = "";
	int rc;

	*out = NULL;
	if (!s)
		return 0;
	rc = tkshm_policy_parse(s, pol, err, sizeof err);
	if (rc != TKSHM_OK) {
		raise_code(st, rc, err);
		return -1;
	}
	*out = pol;
	return 0;
}

static PyObject *
table_apply(PyObject *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "policy", "slots", NULL };
	TableObject *o = (TableObject *)self;
	module_state *st = state_of_type(Py_TYPE(self));
	const char *policy_str = NULL;
	unsigned long long slots = 0;
	const tkshm_policy *want;
	tkshm_policy pol;
	tkshm_change c;
	tkshm_table *t;
	int rc;

	if (!st ||
	    !PyArg_ParseTupleAndKeywords(args, kwds, "|zO&:apply", kwlist,
					 &policy_str, u64_converter, &slots))
		return NULL;
	if (!(t = table_handle(o)) || policy_arg(st, policy_str, &pol, &want))
		return NULL;
	/* The GIL is kept, as for every call here: released, another thread
	 * could close() the handle while the library is using it.  A change
	 * is an operator's rare call; a replacement copies the table once. */
	rc = tkshm_apply(t, want, slots, &c);
	if (rc != TKSHM_OK)
		return raise_code(st, rc,
				  rc == TKSHM_EINVAL && slots ?
					  "a table does not shrink" :
					  NULL);
	o->change = c;
	return change_new(st, &c);
}

static PyObject *
table_get_closed(PyObject *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(((TableObject *)self)->t == NULL);
}

static PyObject *
table_repr(PyObject *self)
{
	TableObject *o = (TableObject *)self;

	if (!o->t || !o->policy)
		return PyUnicode_FromString("<tkshm.Table closed>");
	return PyUnicode_FromFormat("<tkshm.Table policy=%R>", o->policy);
}

static PyMethodDef table_methods[] = {
	{ "check", (PyCFunction)(void (*)(void))table_check,
	  METH_VARARGS | METH_KEYWORDS,
	  "check($self, /, key, cost=1, now_ms=None)\n--\n\n-> Decision.  "
	  "Checks key (str or bytes), consuming cost if admitted." },
	{ "peek", (PyCFunction)(void (*)(void))table_peek,
	  METH_VARARGS | METH_KEYWORDS,
	  "peek($self, /, key, now_ms=None)\n--\n\n-> Decision.  What a "
	  "check of cost 1 would decide, consuming nothing." },
	{ "reset", table_reset, METH_O,
	  "reset($self, key, /)\n--\n\nForgets key." },
	{ "attach", table_attach, METH_O,
	  "attach($self, redis, /)\n--\n\nDecides the checks and peeks of "
	  "this strict table on Redis through redis (a tkshm.Redis); None "
	  "detaches (checks then raise ENOREDIS).  The table keeps a "
	  "reference to it.  A table that is not strict raises tkshm.Error "
	  "(ENOTSUP)." },
	{ "apply", (PyCFunction)(void (*)(void))table_apply,
	  METH_VARARGS | METH_KEYWORDS,
	  "apply($self, /, policy=None, slots=0)\n--\n\n-> Change.  "
	  "Changes the live table's policy and/or size for every process "
	  "using it (in place, or by a replacement that carries every key); "
	  "says what it did, as .change does.  Fewer slots than the table has "
	  "raise EINVAL." },
	{ "stats", table_stats, METH_NOARGS,
	  "stats($self, /)\n--\n\n-> dict of the table's counters and "
	  "geometry" },
	{ "close", table_close, METH_NOARGS,
	  "close($self, /)\n--\n\nUnmaps the table (the shared state stays)." },
	{ "__enter__", table_enter, METH_NOARGS, NULL },
	{ "__exit__", table_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef table_getset[] = {
	{ "policy", table_get_policy, NULL,
	  "the canonical policy string of the table's policy now", NULL },
	{ "change", table_get_change, NULL,
	  "what the open (or the last apply) did: a tkshm.Change (kind "
	  "'none', 'create', 'in_place' or 'replace', states_kept, "
	  "slots_before, slots_after, text)",
	  NULL },
	{ "closed", table_get_closed, NULL, "True once closed", NULL },
	{ "redis", table_get_redis, NULL,
	  "the tkshm.Redis attached (Table.attach), or None", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyType_Slot table_slots[] = {
	{ Py_tp_doc,
	  "Table(path, policy=None, slots=0, create=True, mode=0o600, "
	  "keep=False, private=False, *, redis=None)\n--\n\n"
	  "Opens (or creates) the table at path; path None creates an "
	  "anonymous table shared with the processes forked after.  mode: "
	  "the created file's permission bits, 0 to 0o777 (0 is 0o600; "
	  "others raise ValueError).  Another policy or more slots than the "
	  "table's are applied to the live table (.change says how); "
	  "keep=True raises EMISMATCH instead.  An anonymous table created "
	  "in a forked or spawned worker raises RuntimeError (it would be "
	  "that worker's alone) unless private=True.  redis: a tkshm.Redis "
	  "attached to a strict table (Table.attach).  Open once per worker "
	  "process." },
	{ Py_tp_new, PyType_GenericNew },
	{ Py_tp_init, table_init },
	{ Py_tp_dealloc, table_dealloc },
	{ Py_tp_traverse, table_traverse },
	{ Py_tp_methods, table_methods },
	{ Py_tp_getset, table_getset },
	{ Py_tp_repr, table_repr },
	{ 0, NULL },
};

static PyType_Spec table_spec = {
	.name = "tkshm.Table",
	.basicsize = sizeof(TableObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
		 Py_TPFLAGS_HAVE_GC,
	.slots = table_slots,
};

/* ------------------------------------------------------------------------
 * Module
 * ---------------------------------------------------------------------- */

static PyObject *
mod_strerror(PyObject *m, PyObject *arg)
{
	long code = PyLong_AsLong(arg);

	(void)m;
	if (code == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(tkshm_strerror((int)code));
}

static PyObject *
mod_now_ms(PyObject *m, PyObject *unused)
{
	(void)m;
	(void)unused;
	return PyFloat_FromDouble(tkshm_now_ms());
}

/* client_key(addr, v6_prefix=64) -> str (tkshm_http_client_key). */
static PyObject *
mod_client_key(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "addr", "v6_prefix", NULL };
	const char *addr;
	unsigned int bits = TKSHM_HTTP_V6_PREFIX_DEFAULT;
	char out[TKSHM_HTTP_CLIENT_KEY_MAX];
	int n;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|I:client_key", kwlist,
					 &addr, &bits))
		return NULL;
	n = tkshm_http_client_key(addr, bits, out, sizeof(out));
	if (n < 0)
		return raise_code(PyModule_GetState(m), n, NULL);
	return PyUnicode_FromStringAndSize(out, n);
}

/* http_headers(decision, style, policy_name, window_s, now) -> list of
 * (name, value) (tkshm_http_headers; tkshm.headers() is the friendly
 * form). */
static PyObject *
mod_http_headers(PyObject *m, PyObject *args)
{
	module_state *st = PyModule_GetState(m);
	PyObject *dec;
	int style;
	const char *name;
	long long window_s;
	double now;
	tkshm_http_header h[TKSHM_HTTP_HEADERS_MAX];
	char *buf;
	size_t len;
	PyObject *list;
	int n;

	if (!PyArg_ParseTuple(args, "O!izLd:http_headers", st->decision_type,
			      &dec, &style, &name, &window_s, &now))
		return NULL;
	len = TKSHM_HTTP_BUF_SIZE(name ? strlen(name) : 7);
	buf = PyMem_Malloc(len);
	if (!buf)
		return PyErr_NoMemory();
	n = tkshm_http_headers(&((DecisionObject *)dec)->d,
			       (tkshm_http_style)style, name, (int64_t)window_s,
			       now, h, buf, len);
	if (n < 0) {
		PyMem_Free(buf);
		return raise_code(st, n, NULL);
	}
	list = PyList_New(n);
	for (int i = 0; list && i < n; i++) {
		PyObject *pair = Py_BuildValue("(ss)", h[i].name, h[i].value);
		if (!pair) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, i, pair);
	}
	PyMem_Free(buf);
	return list;
}

static PyObject *
mod_plan(PyObject *m, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "path", "policy", "slots", NULL };
	module_state *st = PyModule_GetState(m);
	PyObject *path_obj, *path_bytes = NULL;
	const char *policy_str = NULL;
	unsigned long long slots = 0;
	tkshm_options opts = TKSHM_OPTIONS_INIT;
	tkshm_policy pol;
	tkshm_change c;
	char err[256] = "";
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|zO&:plan", kwlist,
					 &path_obj, &policy_str, u64_converter,
					 &slots) ||
	    policy_arg(st, policy_str, &pol, &opts.policy))
		return NULL;
	if (path_obj != Py_None &&
	    !PyUnicode_FSConverter(path_obj, &path_bytes))
		return NULL;
	opts.slots = slots;
	opts.errbuf = err;
	opts.errbuf_len = sizeof err;
	rc = tkshm_plan(path_bytes ? PyBytes_AS_STRING(path_bytes) : NULL,
			&opts, &c);
	Py_XDECREF(path_bytes);
	if (rc != TKSHM_OK)
		return raise_code(st, rc, err);
	return change_new(st, &c);
}

/* One dimension of check_multi: (table, key) or (table, key, cost). */
static int
multi_dimension_of(module_state *st, PyObject *item, tkshm_dimension *dim,
		   RedisObject **redis)
{
	PyObject *table_obj, *key, *cost_obj = NULL;
	TableObject *o;
	const char *k;
	Py_ssize_t klen;

	if (!PyTuple_Check(item) ||
	    !PyArg_ParseTuple(item, "OO|O:check_multi", &table_obj, &key,
			      &cost_obj)) {
		if (!PyErr_Occurred() ||
		    PyErr_ExceptionMatches(PyExc_TypeError)) {
			PyErr_Clear();
			PyErr_SetString(
				PyExc_TypeError,
				"each dimension is a tuple (table, key) "
				"or (table, key, cost)");
		}
		return -1;
	}
	if (!PyObject_TypeCheck(table_obj, st->table_type)) {
		PyErr_SetString(PyExc_TypeError,
				"a dimension's table must be a tkshm.Table");
		return -1;
	}
	o = (TableObject *)table_obj;
	if (!table_handle(o) || key_of(key, &k, &klen) < 0)
		return -1;
	dim->table = o->t;
	dim->key = k;
	dim->key_len = (size_t)klen;
	dim->cost = 1.0;
	if (cost_obj) {
		if (!PyFloat_Check(cost_obj) && !PyLong_Check(cost_obj)) {
			PyErr_SetString(PyExc_TypeError,
					"cost must be a number");
			return -1;
		}
		dim->cost = PyFloat_AsDouble(cost_obj);
		if (dim->cost == -1.0 && PyErr_Occurred())
			return -1;
	}
	/* A tkshm_redis serves one thread at a time and this call holds at
	 * most one lock: dimensions on two Redis objects are refused. */
	if (o->redis && *redis && o->redis != *redis) {
		PyErr_SetString(PyExc_ValueError,
				"check_multi: the strict tables of one check "
				"must share one tkshm.Redis");
		return -1;
	}
	if (o->redis)
		*redis = o->redis;
	return o->redis ? 1 : 0;
}

/* The result of check_multi: (binding decision, binding index, [each]). */
static PyObject *
multi_result(module_state *st, const tkshm_decision *out,
	     const tkshm_decision *each, size_t n, size_t binding)
{
	PyObject *list = PyList_New((Py_ssize_t)n);
	PyObject *d;
	size_t i;

	if (!list)
		return NULL;
	for (i = 0; i < n; i++) {
		d = decision_new(st, &each[i]);
		if (!d) {
			Py_DECREF(list);
			return NULL;
		}
		PyList_SET_ITEM(list, (Py_ssize_t)i, d);
	}
	d = decision_new(st, out);
	if (!d) {
		Py_DECREF(list);
		return NULL;
	}
	return Py_BuildValue("(NnN)", d, (Py_ssize_t)binding, list);
}

/* TKSHM_OK when every dimension's table is still open with the handle it
 * had and attached to ro; else a Python exception and TK_PY_RAISED. */
static int
multi_still_attached(PyObject *seq, const tkshm_dimension *dims,
		     const RedisObject *ro)
{
	Py_ssize_t i, n = PySequence_Fast_GET_SIZE(seq);
	TableObject *o;

	for (i = 0; i < n; i++) {
		o = (TableObject *)PyTuple_GET_ITEM(
			PySequence_Fast_GET_ITEM(seq, i), 0);
		if (o->t != dims[i].table || o->redis != ro) {
			PyErr_SetString(PyExc_ValueError,
					"check_multi: a table was closed or "
					"detached during the check");
			return TK_PY_RAISED;
		}
	}
	return TKSHM_OK;
}

static int
multi_run(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
	  int given, double now, tkshm_decision *out, tkshm_decision *each,
	  size_t *binding)
{
	return given ? tkshm_check_multi_at(mode, dims, n, now, out, each,
					    binding) :
		       tkshm_check_multi(mode, dims, n, out, each, binding);
}

static PyObject *
mod_check_multi(PyObject *m, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "dimensions", "mode", "now_ms", NULL };
	module_state *st = PyModule_GetState(m);
	PyObject *dims_obj, *now_obj = NULL, *seq;
	const char *mode_s = "all";
	tkshm_dimension dims[TKSHM_MULTI_MAX];
	tkshm_decision out, each[TKSHM_MULTI_MAX];
	tkshm_multi_mode mode;
	RedisObject *ro = NULL;
	Py_ssize_t n, i;
	size_t binding = 0;
	Py_ssize_t attached = 0;
	double now = 0;
	int given, rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|sO:check_multi", kwlist,
					 &dims_obj, &mode_s, &now_obj) ||
	    now_of(now_obj, &now, &given) < 0)
		return NULL;
	if (strcmp(mode_s, "all") == 0)
		mode = TKSHM_MULTI_ALL;
	else if (strcmp(mode_s, "any") == 0)
		mode = TKSHM_MULTI_ANY;
	else
		return PyErr_Format(PyExc_ValueError,
				    "mode must be 'all' or 'any', not '%s'",
				    mode_s);
	seq = PySequence_Fast(dims_obj, "dimensions must be a sequence");
	if (!seq)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	if (n < 1 || n > TKSHM_MULTI_MAX) {
		Py_DECREF(seq);
		return PyErr_Format(PyExc_ValueError,
				    "check_multi takes 1 to %d dimensions, "
				    "not %zd",
				    TKSHM_MULTI_MAX, n);
	}
	for (i = 0; i < n; i++) {
		rc = multi_dimension_of(st, PySequence_Fast_GET_ITEM(seq, i),
					&dims[i], &ro);
		if (rc < 0) {
			Py_DECREF(seq);
			return NULL;
		}
		attached += rc;
	}
	/* The GIL is released only when every table is attached to the one
	 * Redis object, whose lock then keeps them all from being closed
	 * meanwhile (closing a table takes the lock of its Redis object). */
	if (!ro || attached != n) {
		rc = multi_run(mode, dims, (size_t)n, given, now, &out, each,
			       &binding);
	} else {
		/* As table_call: the Redis object's lock, the GIL released. */
		Py_INCREF(ro);
		if (redis_lock(ro) < 0) {
			Py_DECREF(ro);
			Py_DECREF(seq);
			return NULL;
		}
		/* Waiting for the lock let other threads run: a table closed
		 * or detached meanwhile is not used. */
		rc = multi_still_attached(seq, dims, ro);
		if (rc == TKSHM_OK) {
			Py_BEGIN_ALLOW_THREADS rc =
				multi_run(mode, dims, (size_t)n, given, now,
					  &out, each, &binding);
			Py_END_ALLOW_THREADS
		}
		table_release_redis(ro);
	}
	Py_DECREF(seq); /* after the call: the keys point into its items */
	if (rc == TK_PY_RAISED)
		return NULL;
	if (rc != TKSHM_OK)
		return raise_code(st, rc, NULL);
	return multi_result(st, &out, each, (size_t)n, binding);
}

static PyMethodDef module_methods[] = {
	{ "strerror", mod_strerror, METH_O,
	  "strerror($module, code, /)\n--\n\n-> the library's sentence for "
	  "an error code" },
	{ "now_ms", mod_now_ms, METH_NOARGS,
	  "now_ms($module, /)\n--\n\n-> epoch ms (the clock checks use)" },
	{ "client_key", (PyCFunction)(void (*)(void))mod_client_key,
	  METH_VARARGS | METH_KEYWORDS,
	  "client_key($module, /, addr, v6_prefix=64)\n--\n\n-> the "
	  "rate-limit key of a client address (IPv6 aggregated to its "
	  "prefix); tkshm.Error (EINVAL) if addr is not an IP address" },
	{ "plan", (PyCFunction)(void (*)(void))mod_plan,
	  METH_VARARGS | METH_KEYWORDS,
	  "plan($module, /, path, policy=None, slots=0)\n--\n\n-> Change.  "
	  "What Table(path, policy, slots) would do to the table at path, "
	  "changing nothing (as Table.change says it)." },
	{ "check_multi", (PyCFunction)(void (*)(void))mod_check_multi,
	  METH_VARARGS | METH_KEYWORDS,
	  "check_multi($module, /, dimensions, mode='all', now_ms=None)\n"
	  "--\n\n-> (Decision, binding, [Decision]).  Checks several "
	  "(table, key[, cost]) at one instant as one decision: 'all' admits "
	  "only if every dimension admits and consumes nothing otherwise; "
	  "'any' admits if one does.  Returns the binding decision, its index "
	  "and each dimension's." },
	{ "http_headers", mod_http_headers, METH_VARARGS,
	  "http_headers($module, decision, style, policy_name, window_s, now, "
	  "/)\n--\n\n-> [(name, value)]; style 0 draft, 1 legacy, 2 none" },
	{ NULL, NULL, 0, NULL },
};

static const struct {
	const char *name;
	int code;
} error_codes[] = {
#define E(x)          \
	{             \
#x, x \
	}
	E(TKSHM_ENULL),	       E(TKSHM_EINVAL),	   E(TKSHM_EKEYEMPTY),
	E(TKSHM_EKEYLONG),     E(TKSHM_ECOST),	   E(TKSHM_ENOW),
	E(TKSHM_EPOLICY),      E(TKSHM_EMISMATCH), E(TKSHM_EBADMAGIC),
	E(TKSHM_EVERSION),     E(TKSHM_ESIZE),	   E(TKSHM_ECORRUPT),
	E(TKSHM_ESYMLINK),     E(TKSHM_ENOTFILE),  E(TKSHM_EPERM),
	E(TKSHM_ENOENT),       E(TKSHM_EEXIST),	   E(TKSHM_ENOSPC),
	E(TKSHM_ENOMEM),       E(TKSHM_ESYSTEM),   E(TKSHM_EFULL),
	E(TKSHM_EBUSY),	       E(TKSHM_EREADONLY), E(TKSHM_ENOTSUP),
	E(TKSHM_EINTR),	       E(TKSHM_ENOTHELD),  E(TKSHM_ENOREDIS),
	E(TKSHM_EUNAVAILABLE), E(TKSHM_EREDIS),	   E(TKSHM_ECROSSSLOT),
#undef E
};

static void
tk_py_watch_forks(void)
{
	(void)pthread_atfork(NULL, NULL, mark_forked);
}

static int
module_exec(PyObject *m)
{
	module_state *st = PyModule_GetState(m);
	PyObject *dict;
	size_t i;

	{
		static pthread_once_t once = PTHREAD_ONCE_INIT;

		(void)pthread_once(&once, tk_py_watch_forks);
	}
	dict = Py_BuildValue("{s:i,s:s}", "code", 0, "name", "TKSHM_OK");
	if (!dict)
		return -1;
	st->error = PyErr_NewExceptionWithDoc(
		"tkshm.Error",
		"A tkshm call failed: .code is the library's negative error "
		"code, .name its symbol (TKSHM_EKEYEMPTY).",
		PyExc_Exception, dict);
	Py_DECREF(dict);
	if (!st->error || PyModule_AddObjectRef(m, "Error", st->error) < 0)
		return -1;
	st->decision_type = (PyTypeObject *)PyType_FromModuleAndSpec(
		m, &decision_spec, NULL);
	if (!st->decision_type || PyModule_AddType(m, st->decision_type) < 0)
		return -1;
	st->table_type =
		(PyTypeObject *)PyType_FromModuleAndSpec(m, &table_spec, NULL);
	if (!st->table_type || PyModule_AddType(m, st->table_type) < 0)
		return -1;
	st->change_type = PyStructSequence_NewType(&change_desc);
	if (!st->change_type || PyModule_AddType(m, st->change_type) < 0)
		return -1;
	st->redis_type =
		(PyTypeObject *)PyType_FromModuleAndSpec(m, &redis_spec, NULL);
	if (!st->redis_type || PyModule_AddType(m, st->redis_type) < 0)
		return -1;
	for (i = 0; i < sizeof(error_codes) / sizeof(error_codes[0]); i++)
		if (PyModule_AddIntConstant(m, error_codes[i].name + 6,
					    error_codes[i].code) < 0)
			return -1;
	if (PyModule_AddIntConstant(m, "KEY_MAX", TKSHM_KEY_MAX) < 0 ||
	    PyModule_AddIntConstant(m, "LEASE_KEY_MAX", TKSHM_LEASE_KEY_MAX) <
		    0 ||
	    PyModule_AddIntConstant(m, "DECISION_EVICTED_DEBTOR",
				    TKSHM_DECISION_EVICTED_DEBTOR) < 0 ||
	    PyModule_AddIntConstant(m, "DECISION_DEBT_RESTORED",
				    TKSHM_DECISION_DEBT_RESTORED) < 0 ||
	    PyModule_AddIntConstant(m, "DECISION_CACHED",
				    TKSHM_DECISION_CACHED) < 0 ||
	    PyModule_AddIntConstant(m, "DECISION_FALLBACK",
				    TKSHM_DECISION_FALLBACK) < 0 ||
	    PyModule_AddIntConstant(m, "DECISION_NO_LEASE",
				    TKSHM_DECISION_NO_LEASE) < 0 ||
	    PyModule_AddIntConstant(m, "V6_PREFIX_DEFAULT",
				    TKSHM_HTTP_V6_PREFIX_DEFAULT) < 0 ||
	    PyModule_AddStringConstant(m, "library_version", tkshm_version()) <
		    0)
		return -1;
	return 0;
}

static int
module_traverse(PyObject *m, visitproc visit, void *arg)
{
	module_state *st = PyModule_GetState(m);

	Py_VISIT(st->error);
	Py_VISIT(st->decision_type);
	Py_VISIT(st->table_type);
	Py_VISIT(st->change_type);
	Py_VISIT(st->redis_type);
	return 0;
}

static int
module_clear(PyObject *m)
{
	module_state *st = PyModule_GetState(m);

	Py_CLEAR(st->error);
	Py_CLEAR(st->decision_type);
	Py_CLEAR(st->table_type);
	Py_CLEAR(st->change_type);
	Py_CLEAR(st->redis_type);
	return 0;
}

static void
module_free(void *m)
{
	module_clear((PyObject *)m);
}

static PyModuleDef_Slot module_slots[] = {
	{ Py_mod_exec, module_exec },
	{ 0, NULL },
};

static struct PyModuleDef tkshm_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "tkshm._tkshm",
	.m_doc = "tkshm: lock-free shared-memory rate limiting across "
		 "processes (the C extension; import tkshm).",
	.m_size = sizeof(module_state),
	.m_methods = module_methods,
	.m_slots = module_slots,
	.m_traverse = module_traverse,
	.m_clear = module_clear,
	.m_free = module_free,
};

PyMODINIT_FUNC
PyInit__tkshm(void)
{
	return PyModuleDef_Init(&tkshm_module);
}
