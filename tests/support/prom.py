"""The Prometheus text exposition as the tests read it (the exporter's,
Apache's and nginx's status pages).  Standard library only."""


def samples(text):
    """{'name{labels}': value} of an exposition (comments left out)."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out
