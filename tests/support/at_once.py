"""Many requests at once: how the bindings' Python test harnesses
(bindings/*/tests) put concurrent clients on a server they started.
Standard library only."""

import threading


def at_once(items, call, threads, errors=(OSError,), failed=None):
    """call(item) for every item of `items`, from `threads` threads that a
    barrier releases together, each taking the next item until none is
    left.  Returns [(item, result)] in completion order.

    An exception of `errors` (a refused or broken connection) gives
    failed(item, exception) as that item's result, so a test counts it
    instead of losing it; with failed None it is raised, as is any other
    exception, in the caller once every thread has ended."""
    todo = list(reversed(list(items)))
    out = []
    raised = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def client():
        start.wait()
        while True:
            with lock:
                if not todo or raised:
                    return
                item = todo.pop()
            try:
                result = call(item)
            except errors as e:
                if failed is None:
                    with lock:
                        raised.append(e)
                    return
                result = failed(item, e)
            except BaseException as e:  # noqa: B902 - re-raised below
                with lock:
                    raised.append(e)
                return
            with lock:
                out.append((item, result))

    ts = [threading.Thread(target=client) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if raised:
        raise raised[0]
    return out
