"""Where a tkshm:// storage of the `limits` library keeps its tables
(tkshm.limits_storage): the URI and its options, the table files' names,
and the listing of the tables a location holds.

    tkshm://                      run_dir()/limits.<table>
    tkshm://myapp                 run_dir()/myapp.<table>
    tkshm:///run/tkshm/myapp/     /run/tkshm/myapp/<table>   (a directory)
    tkshm:///run/tkshm/myapp      /run/tkshm/myapp.<table>   (a prefix, unless
                                  /run/tkshm/myapp is a directory)
    ...?slots=65536&mode=0640     the tables' size and file mode

<table> names one rate item of one kind, e.g. fixed-10-per-60000ms: every
process that decides on that item opens the same file.
"""

import collections
import os
import re
import urllib.parse

from limits.errors import ConfigurationError

from . import Error, default_table_path


class URIError(ConfigurationError, ValueError):
    """A tkshm:// URI or storage option that cannot be used.  A
    ConfigurationError, as limits raises for a storage it cannot make, and
    a ValueError."""


DEFAULT_NAME = "limits"
MAX_SLOTS = 1 << 36  # TKSHM_MAX_SLOTS
# A name in the run directory: default_table_path() would rewrite anything
# else, and two spellings must not silently name one table.
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# kind-amount-per-<window>ms, or count-per-<window>ms (keys not of limits'
# shape): the files a location holds, whatever created them.
TABLE_NAME = re.compile(
    r"(?:(?P<kind>fixed|log|sliding)-(?P<amount>[0-9]+)|(?P<count>count))"
    r"-per-(?P<window>[0-9]+)ms\Z")


class Location(collections.namedtuple(
        "Location", "directory prefix slots mode")):
    """Table files are directory/prefix<table name>, created with `slots`
    slots (0: the library's 65536) and permission bits `mode`."""

    __slots__ = ()

    def path(self, table_name):
        return os.path.join(self.directory, self.prefix + table_name)

    def table_names(self):
        """The names of the tables this location holds now (files a
        replacement leaves, NAME.XXXXXXXX.new and NAME.<id>.pred, are not
        tables)."""
        try:
            files = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        n = len(self.prefix)
        return sorted(f[n:] for f in files if f.startswith(self.prefix)
                      and TABLE_NAME.match(f[n:]))


def parse(uri, options):
    """The Location a tkshm:// URI names; `options` are the storage's
    keyword options (Flask-Limiter's storage_options), which may give
    slots and mode too.  URIError names what is wrong."""
    # urlsplit drops a tab or a newline, and %00 makes a path no system
    # call takes: a control character, raw or %-escaped, is refused, not
    # silently dropped (tkshm://a%0Ab would be tkshm://ab).
    if not isinstance(uri, str) or _CONTROL.search(
            urllib.parse.unquote(uri)):
        raise URIError("%r: a tkshm:// URI is a string with no control "
                       "characters" % (uri,))
    try:
        parts = urllib.parse.urlsplit(uri)
        port = parts.port  # a port that is not a number raises here
    except ValueError as e:
        raise URIError("%r is not a URI tkshm:// can use: %s" % (uri, e)) \
            from None
    if parts.scheme != "tkshm":
        raise URIError("%r: the scheme must be tkshm://" % (uri,))
    if parts.fragment:
        raise URIError("%r: a tkshm:// URI has no #fragment" % (uri,))
    if parts.username is not None or parts.password is not None \
            or port is not None:
        raise URIError("%r: a tkshm:// URI has no user, password or port: "
                       "tkshm://NAME or tkshm:///PATH" % (uri,))
    query = _query(uri, parts.query)
    slots = _one_way(uri, "slots", _slots, query, options, 0)
    mode = _one_way(uri, "mode", _mode, query, options, 0o600)
    unknown = sorted(set(options) - {"slots", "mode"})
    if unknown:
        raise URIError("unknown tkshm:// storage option(s) %s: the options "
                       "are slots and mode" % ", ".join(unknown))
    path = urllib.parse.unquote(parts.path)
    if parts.netloc and path:
        raise URIError("%r: give a name (tkshm://NAME, tables in "
                       "tkshm.run_dir()) or a path (tkshm:///PATH), not "
                       "both" % (uri,))
    if path:
        directory, prefix = _path(uri, path, mode)
    else:
        directory, prefix = _named(uri, urllib.parse.unquote(parts.netloc)
                                   or DEFAULT_NAME)
    return Location(directory, prefix, slots, mode)


def _query(uri, text):
    try:
        pairs = urllib.parse.parse_qsl(text, keep_blank_values=True,
                                       strict_parsing=bool(text))
    except ValueError:
        raise URIError("%r: the query must be name=value pairs joined by "
                       "&, e.g. ?slots=65536&mode=0640" % (uri,)) from None
    query = {}
    for name, value in pairs:
        if name not in ("slots", "mode"):
            raise URIError("%r: unknown option %r: the options are slots "
                           "and mode" % (uri, name))
        if name in query:
            raise URIError("%r: %s is given twice" % (uri, name))
        query[name] = value
    return query


def _one_way(uri, name, parse_value, query, options, default):
    """The option as the URI or the storage options give it (`default` if
    neither does); both is an error unless they agree, so that no value
    wins silently."""
    values = [parse_value(uri, source[name]) for source in (query, options)
              if name in source]
    if len(values) == 2 and values[0] != values[1]:
        raise URIError("%r: %s=%s in the URI and %s=%r in the storage "
                       "options" % (uri, name, query[name], name,
                                    options[name]))
    return values[0] if values else default


def _slots(uri, value):
    try:
        slots = int(value, 10) if isinstance(value, str) else \
            _whole(value)
    except (TypeError, ValueError):
        slots = -1
    if not 1 <= slots <= MAX_SLOTS:
        raise URIError("%r: slots=%r must be a whole number from 1 to 2^36 "
                       "(rounded up to a power of two)" % (uri, value))
    return slots


def _mode(uri, value):
    try:
        mode = int(value, 8) if isinstance(value, str) else _whole(value)
    except (TypeError, ValueError):
        mode = -1
    if not 0 <= mode <= 0o777:
        raise URIError("%r: mode=%r must be permission bits, octal 0 to 0777 "
                       "(e.g. 0640; 0 is 0600)" % (uri, value))
    return mode or 0o600


def _whole(value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(value)
    return value


def _named(uri, name):
    """tkshm://NAME: NAME.<table> in tkshm.run_dir(), as
    default_table_path() names a table."""
    if not _NAME.match(name):
        raise URIError("%r: the name %r must be 1 to 64 of A-Z a-z 0-9 . _ "
                       "- and not start with a dot" % (uri, name))
    try:
        base = default_table_path(name)
    except Error as e:  # the run directory is a symbolic link
        raise URIError("%r: %s" % (uri, e)) from None
    return os.path.dirname(base), os.path.basename(base) + "."


def _path(uri, path, mode):
    """tkshm:///PATH: a directory (a trailing / or one that exists: made
    if missing) or a prefix whose directory exists."""
    if not os.path.isabs(path):
        raise URIError("%r: the path must be absolute (tkshm:///PATH); "
                       "tkshm://NAME names tables in tkshm.run_dir()" % (uri,))
    if path.endswith("/") or os.path.isdir(path):
        directory = os.path.normpath(path)
        _make_directory(uri, directory, mode)
        return directory, ""
    directory, prefix = os.path.split(path)
    if not os.path.isdir(directory):
        raise URIError("%r: %s is not a directory (a path ending in / names "
                       "a directory to make)" % (uri, directory))
    return directory, prefix + "."


def _make_directory(uri, directory, mode):
    """Makes the directory if it is missing, open to whoever the tables'
    mode lets use them (0640: the group may enter and read): rwx for the
    owner, r-x for a class that may read, w for one that may write."""
    bits = 0o700 | (mode & 0o066) | ((mode & 0o044) >> 2)
    try:
        os.mkdir(directory, bits)
        os.chmod(directory, bits)  # whatever the umask took away
    except FileExistsError:
        pass
    except OSError as e:
        raise URIError("%r: cannot make the directory %s: %s"
                       % (uri, directory, e.strerror)) from None
    if not os.path.isdir(directory):
        raise URIError("%r: %s is not a directory" % (uri, directory))
