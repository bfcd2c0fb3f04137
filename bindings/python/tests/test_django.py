"""tkshm.django in-process: a Django project configured here
(settings.configure, this module its URLconf) with the test Client:

- the limit() decorator: several limits as one decision (a denial by one
  consumes nothing in the others: the tables' peek says so), stacked
  decorators merged, each view its own buckets, a name shared by two
  views, class-based views (method_decorator), an async view;
- the middleware: the default limits (per view, one table), exempt
  views, a view's own limits replacing or joining them, the headers;
- the key kinds: REMOTE_ADDR (IPv6 by its /64), a header, request.user
  (authenticated, anonymous, absent), a function; a cost function;
- the header styles, the denial (429 and Retry-After, another status,
  TKSHM["DENIED_VIEW"]), fail-open and fail-closed, a rate string;
- settings.TKSHM validated: ImproperlyConfigured naming the setting.

Run as a script (ctest does): exits 77 (skipped) without Debian's
python3-django."""

import json
import os
import shutil
import sys
import tempfile
import unittest

DAY_MS = 86400000
LOCAL = "a:127.0.0.1"  # the test client's address, as the limits key it


def gcra(limit):
    """limit per day, all of it at once: nothing refills during a test."""
    return "gcra:limit=%d,periodMs=%d" % (limit, DAY_MS)


def strict(failure):
    """A strict table with no Redis attached: every check fails."""
    return gcra(5) + ";mode=strict,prefix=t,failure=" + failure


BASE_TKSHM = {"DEFAULT_LIMITS": [gcra(2)], "SLOTS": 1024}

try:
    import django
    from django.conf import settings
except ImportError as e:
    MISSING = e
else:
    MISSING = None
    RUN_DIR = tempfile.mkdtemp(prefix="tkshm-django-")
    os.chmod(RUN_DIR, 0o700)
    os.environ["XDG_RUNTIME_DIR"] = RUN_DIR
    settings.configure(
        DEBUG=False, SECRET_KEY="test", ALLOWED_HOSTS=["testserver"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=["django.contrib.auth",
                        "django.contrib.contenttypes"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3",
                               "NAME": ":memory:"}},
        MIDDLEWARE=[__name__ + ".FakeAuth",
                    "tkshm.django.RateLimitMiddleware"],
        TKSHM=BASE_TKSHM)
    django.setup()

    from django.contrib.auth.models import AnonymousUser
    from django.core.exceptions import ImproperlyConfigured
    from django.http import HttpResponse, JsonResponse
    from django.test import Client, SimpleTestCase, override_settings
    from django.urls import path
    from django.utils.decorators import method_decorator
    from django.views import View

    import tkshm
    from tkshm.django import RateLimitMiddleware, exempt, limit, \
        limits_for
    from tkshm.route import Limit

if MISSING is None:
    class User:
        is_authenticated = True

        def __init__(self, pk):
            self.pk = pk

    class FakeAuth:
        """Sets request.user as AuthenticationMiddleware would, from the
        X-User header (none: AnonymousUser; X-No-User: no attribute)."""

        def __init__(self, get_response):
            self.get_response = get_response

        def __call__(self, request):
            if "HTTP_X_NO_USER" not in request.META:
                name = request.META.get("HTTP_X_USER")
                request.user = User(name) if name else AnonymousUser()
            return self.get_response(request)

    def ok(request, *args):
        return HttpResponse("ok\n")

    def denied(request, verdict):
        return JsonResponse({"denied": True, "status": verdict.status},
                            status=verdict.status)

    def key_from_path(request):
        return request.GET.get("k")

    several = limit(gcra(5), gcra(2))(ok)

    @limit(gcra(5))
    @limit(gcra(2))
    def stacked(request):
        return ok(request)

    @limit(gcra(2))
    def index(request):
        return ok(request)

    @limit(gcra(2))
    def login(request):
        return ok(request)

    shared = limit(gcra(3), name="django-shared")

    @shared
    def shared_a(request):
        return ok(request)

    @limit(gcra(3), name="django-shared")
    def shared_b(request):
        return ok(request)

    def plain_x(request):
        return ok(request)

    def plain_y(request):
        return ok(request)

    @exempt
    def free(request):
        return ok(request)

    @limit(gcra(3))
    def own(request):
        return ok(request)

    @limit(gcra(3), override_defaults=False)
    def both(request):
        return ok(request)

    @limit(gcra(1))
    def by_ip(request):
        return ok(request)

    @limit(gcra(1), key="header:X-Api-Key")
    def by_header(request):
        return ok(request)

    @limit(gcra(1), key="user")
    def by_user(request):
        return ok(request)

    @limit(gcra(5), key=key_from_path,
           cost=lambda request: int(request.GET.get("n", "1")))
    def by_function(request):
        return ok(request)

    @limit(gcra(1))
    def styled(request):
        return ok(request)

    @limit(strict("fail-open"))
    def strict_open(request):
        return ok(request)

    @limit(strict("fail-closed"))
    def strict_closed(request):
        return ok(request)

    @limit("5/minute")
    def rate_string(request):
        return ok(request)

    @limit(gcra(1))
    async def async_view(request):
        return HttpResponse("ok\n")

    @method_decorator(limit(gcra(1)), name="dispatch")
    class Items(View):
        def get(self, request):
            return ok(request)

    @method_decorator([limit(gcra(5)), limit(gcra(2))], name="dispatch")
    class Merged(View):
        def get(self, request):
            return ok(request)

    class Plain(View):
        def get(self, request):
            return ok(request)

    @method_decorator(limit(gcra(1)), name="dispatch")
    @method_decorator(limit(gcra(2)), name="dispatch")
    class Twice(View):
        def get(self, request):
            return ok(request)

    VIEWS = dict(
        several=several, stacked=stacked, index=index, login=login,
        shared_a=shared_a, shared_b=shared_b, plain_x=plain_x,
        plain_y=plain_y, free=free, own=own, both=both, by_ip=by_ip,
        by_header=by_header, by_user=by_user, by_function=by_function,
        styled=styled, strict_open=strict_open,
        strict_closed=strict_closed, rate_string=rate_string,
        async_view=async_view, items=Items.as_view(),
        merged=Merged.as_view(), plain=Plain.as_view(),
        twice=Twice.as_view())
    urlpatterns = [path(name, view) for name, view in VIEWS.items()]


def codes(client, url, n, **extra):
    return [client.get(url, **extra).status_code for _ in range(n)]


class DjangoCase(SimpleTestCase if MISSING is None else unittest.TestCase):
    def setUp(self):
        self.c = Client()

    def assertRaisesWith(self, exc, text, fn, *args, **kw):
        with self.assertRaises(exc) as cm:
            fn(*args, **kw)
        self.assertIn(text, str(cm.exception))


class DecoratorTest(DjangoCase):
    def test_several_limits_are_one_decision(self):
        for name, view in (("several", several), ("stacked", stacked)):
            self.assertEqual(codes(self.c, "/" + name, 4),
                             [200, 200, 429, 429])
            tables = limits_for(view).tables
            self.assertEqual(len(tables), 2)
            # the narrow limit denied twice; the wide one counted only
            # the two admissions
            self.assertEqual(sorted(t.peek(LOCAL).remaining
                                    for t in tables), [0, 3], name)

    def test_denial_and_headers(self):
        self.assertEqual(codes(self.c, "/login", 2), [200, 200])
        r = self.c.get("/login")
        self.assertEqual(r.status_code, 429)
        self.assertEqual(r["Content-Type"], "text/plain; charset=utf-8")
        self.assertEqual(r.content, b"Too Many Requests\n")
        self.assertGreaterEqual(int(r["Retry-After"]), 1)
        self.assertEqual(r["RateLimit-Policy"], '"default";q=2')
        self.assertTrue(r["RateLimit"].startswith('"default";r=0;t='))
        self.assertEqual(r.wsgi_request.rate_limit.status, 429)

    def test_views_have_their_own_buckets(self):
        addr = "10.5.0.1"  # a client of this test alone
        self.assertEqual(codes(self.c, "/index", 3, REMOTE_ADDR=addr),
                         [200, 200, 429])
        self.assertEqual(codes(self.c, "/login", 1, REMOTE_ADDR=addr),
                         [200])
        self.assertEqual(codes(self.c, "/index", 1, REMOTE_ADDR="10.5.0.2"),
                         [200])
        self.assertEqual(limits_for(index).tables[0].peek(
            "a:" + addr).remaining, 0)
        self.assertEqual(limits_for(login).tables[0].peek(
            "a:" + addr).remaining, 1)

    def test_a_name_shares_a_table_across_views(self):
        self.assertEqual(codes(self.c, "/shared_a", 2) +
                         codes(self.c, "/shared_b", 2), [200, 200, 200, 429])
        self.assertTrue(os.path.exists(
            tkshm.default_table_path("limit-django-shared")))

    def test_class_based_views(self):
        self.assertEqual(codes(self.c, "/items", 2), [200, 429])
        # two limits in one method_decorator: one decision
        self.assertEqual(codes(self.c, "/merged", 3), [200, 200, 429])
        # an undecorated class-based view: the default limits
        self.assertEqual(codes(self.c, "/plain", 3), [200, 200, 429])
        # two separate method_decorators: refused, not counted twice
        self.assertRaisesWith(ValueError, "two separate sets",
                              self.c.get, "/twice")

    def test_async_view(self):
        r = self.c.get("/async_view")
        self.assertEqual(r.status_code, 200)
        self.assertIn("RateLimit", r)
        self.assertEqual(self.c.get("/async_view").status_code, 429)

    def test_rate_string(self):
        self.assertEqual(codes(self.c, "/rate_string", 6), [200] * 5 + [429])

    def test_misuse(self):
        self.assertRaisesWith(TypeError, "method_decorator", limit(gcra(1)),
                              Plain)
        self.assertRaisesWith(ValueError, "cannot be exempt", exempt, own)
        self.assertRaisesWith(ValueError, "exempt", limit(gcra(1)), free)
        self.assertRaisesWith(tkshm.Error, "fortnight", limit, "5/fortnight")
        self.assertRaisesWith(ValueError, "key must be", limit, gcra(1),
                              key="cookie")
        self.assertRaisesWith(ValueError, "limits_for() takes",
                              limits_for, Items.as_view())


class MiddlewareTest(DjangoCase):
    def test_defaults_exempt_and_own_limits(self):
        for name in ("plain_x", "plain_y"):
            self.assertEqual(codes(self.c, "/" + name, 3), [200, 200, 429])
        r = self.c.get("/free")
        self.assertNotIn("RateLimit", r)
        self.assertEqual(codes(self.c, "/free", 4), [200] * 4)
        self.assertEqual(codes(self.c, "/own", 4), [200, 200, 200, 429])
        self.assertEqual(codes(self.c, "/both", 3), [200, 200, 429])
        self.assertEqual(self.c.get("/nowhere").status_code, 404)
        x, y = limits_for(plain_x), limits_for(plain_y)
        self.assertIsNone(limits_for(free))
        combined = limits_for(both)
        self.assertEqual(len(combined.tables), 2)
        # one table for the default limit, a bucket per view in it (each
        # view's id, a NUL, then the key)
        for limits, view in ((x, "plain_x"), (y, "plain_y"),
                             (combined, "both")):
            key = ("%s.%s\0%s" % (__name__, view, LOCAL)).encode()
            self.assertEqual(limits.tables[-1].peek(key).remaining, 0)
            self.assertEqual(limits.tables[-1].stats(), x.tables[0].stats())
        self.assertEqual(combined.tables[0].peek(LOCAL).remaining, 1)

    def test_a_named_default_is_shared(self):
        with override_settings(TKSHM={
                "DEFAULT_LIMITS": [Limit(gcra(3), name="django-site")],
                "SLOTS": 1024}):
            self.assertEqual(codes(self.c, "/plain_x", 2) +
                             codes(self.c, "/plain_y", 2),
                             [200, 200, 200, 429])

    def test_disabled(self):
        with override_settings(TKSHM=dict(BASE_TKSHM, ENABLED=False)):
            self.assertEqual(codes(self.c, "/plain_x", 3, REMOTE_ADDR=
                                   "10.9.9.9") +
                             codes(self.c, "/own", 4, REMOTE_ADDR=
                                   "10.9.9.9"), [200] * 7)


class KeysTest(DjangoCase):
    def test_ipv6_by_its_64(self):
        def get(addr):
            return self.c.get("/by_ip", REMOTE_ADDR=addr).status_code

        self.assertEqual(get("2001:db8:1:2::1"), 200)
        self.assertEqual(get("2001:db8:1:2:ffff::9"), 429)  # same /64
        self.assertEqual(get("2001:db8:1:3::1"), 200)       # another /64
        self.assertEqual(get("192.0.2.1"), 200)
        self.assertEqual(get("::ffff:192.0.2.1"), 429)      # the same v4
        t = limits_for(by_ip).tables[0]
        self.assertEqual(t.peek("a:2001:db8:1:2::/64").remaining, 0)

    def test_header(self):
        def get(**extra):
            return self.c.get("/by_header", **extra).status_code

        self.assertEqual([get(HTTP_X_API_KEY="k1"), get(HTTP_X_API_KEY="k1"),
                          get(HTTP_X_API_KEY="k2")], [200, 429, 200])
        self.assertEqual([get(), get()], [200, 429])  # by address
        t = limits_for(by_header).tables[0]
        self.assertEqual(t.peek("h:k2").remaining, 0)

    def test_user(self):
        def get(**extra):
            return self.c.get("/by_user", **extra).status_code

        self.assertEqual([get(HTTP_X_USER="alice"), get(HTTP_X_USER="alice"),
                          get(HTTP_X_USER="bob")], [200, 429, 200])
        # anonymous, then no request.user at all: by address, one bucket
        self.assertEqual([get(), get(HTTP_X_NO_USER="1")], [200, 429])
        t = limits_for(by_user).tables[0]
        self.assertEqual(t.peek("u:bob").remaining, 0)
        self.assertEqual(t.peek(LOCAL).remaining, 0)

    def test_function_and_cost(self):
        r = self.c.get("/by_function")
        self.assertEqual(r.status_code, 200)  # no key: not limited
        self.assertNotIn("RateLimit", r)
        self.assertEqual([self.c.get("/by_function?k=a&n=3").status_code,
                          self.c.get("/by_function?k=a&n=3").status_code,
                          self.c.get("/by_function?k=a&n=2").status_code],
                         [200, 429, 200])

    def test_key_setting_and_dotted_path(self):
        with override_settings(TKSHM=dict(
                BASE_TKSHM, KEY=__name__ + ".key_from_path")):
            self.assertEqual([self.c.get("/plain_y?k=z").status_code
                              for _ in range(3)], [200, 200, 429])
            self.assertEqual(self.c.get("/plain_y?k=w").status_code, 200)


class ResponsesTest(DjangoCase):
    def test_header_styles(self):
        cases = {
            "draft": {"RateLimit-Policy", "RateLimit"},
            "legacy": {"RateLimit-Limit", "RateLimit-Remaining",
                       "RateLimit-Reset"},
            "none": set()}
        every = set().union(*cases.values())
        for i, (style, expect) in enumerate(cases.items()):
            addr = "10.1.0.%d" % i  # a bucket of its own
            with override_settings(TKSHM=dict(BASE_TKSHM, HEADERS=style)):
                for status in (200, 429):
                    r = self.c.get("/styled", REMOTE_ADDR=addr)
                    self.assertEqual(r.status_code, status)
                    self.assertEqual({h for h in every if h in r}, expect,
                                     (style, status))
                    self.assertEqual("Retry-After" in r, status == 429)

    def test_another_status_and_a_denied_view(self):
        with override_settings(TKSHM=dict(BASE_TKSHM, STATUS=403)):
            self.assertEqual(codes(self.c, "/styled", 2,
                                   REMOTE_ADDR="10.2.0.1"), [200, 403])
        with override_settings(TKSHM=dict(
                BASE_TKSHM, DENIED_VIEW=__name__ + ".denied")):
            self.c.get("/styled", REMOTE_ADDR="10.2.0.2")
            r = self.c.get("/styled", REMOTE_ADDR="10.2.0.2")
            self.assertEqual(r.status_code, 429)
            self.assertEqual(json.loads(r.content),
                             {"denied": True, "status": 429})
            self.assertIn("Retry-After", r)

    def test_failed_check_fails_open_unless_closed(self):
        cases = (("strict_open", True, 200), ("strict_open", False, 503),
                 ("strict_closed", True, 503))
        for view, fail_open, expect in cases:
            with override_settings(TKSHM=dict(BASE_TKSHM,
                                              FAIL_OPEN=fail_open)):
                r = self.c.get("/" + view)
                self.assertEqual(r.status_code, expect, (view, fail_open))
                if expect == 503:
                    self.assertEqual(r.content, b"rate limiter unavailable\n")


class SettingsTest(DjangoCase):
    def test_bad_settings_name_the_setting(self):
        cases = (
            ({"HEADERS": "loud"}, "TKSHM['HEADERS']"),
            ({"HEADER": "draft"}, "did you mean TKSHM['HEADERS']"),
            ({"STATUS": 200}, "TKSHM['STATUS']"),
            ({"FAIL_OPEN": "no"}, "TKSHM['FAIL_OPEN']"),
            ({"SLOTS": -1}, "TKSHM['SLOTS']"),
            ({"KEY": "cookie"}, "TKSHM['KEY']"),
            ({"KEY": "nowhere.key"}, "cannot import 'nowhere.key'"),
            ({"DEFAULT_LIMITS": ["5/fortnight"]}, "TKSHM['DEFAULT_LIMITS']"),
            ({"DEFAULT_LIMITS": gcra(1) + "x"}, "TKSHM['DEFAULT_LIMITS']"),
            ({"REDIS": {"port": 0}}, "TKSHM['REDIS']"),
            ({"REDIS": {"hots": "x"}}, "TKSHM['REDIS']"),
            ({"DENIED_VIEW": "nowhere.view"}, "TKSHM['DENIED_VIEW']"),
            ({"DENIED_VIEW": 5}, "TKSHM['DENIED_VIEW']"),
            ("100/minute", "settings.TKSHM must be a dict"),
        )
        for tkshm_setting, text in cases:
            with override_settings(TKSHM=tkshm_setting):
                self.assertRaisesWith(ImproperlyConfigured, text,
                                      RateLimitMiddleware, ok)
                # the first request of a server with it fails as well
                self.assertRaisesWith(ImproperlyConfigured, text,
                                      Client().get, "/own")

    def test_no_setting_at_all(self):
        with override_settings():
            del settings.TKSHM
            RateLimitMiddleware(ok)
            self.assertEqual(codes(self.c, "/plain_x", 3,
                                   REMOTE_ADDR="10.3.0.1"), [200] * 3)


if __name__ == "__main__":
    if MISSING is not None:
        print("skipped: %s (apt-get install python3-django)" % MISSING,
              file=sys.stderr)
        sys.exit(77)
    try:
        unittest.main(verbosity=2)
    finally:
        shutil.rmtree(RUN_DIR)
