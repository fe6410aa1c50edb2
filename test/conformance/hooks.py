# schemathesis hooks for the conformance run (test/conformance/conformance.test.ts): every generated request gets
# a fresh X-Timestamp, and the role's token unless the case already carries credentials of its own.
import os
import time

import schemathesis

TOKEN = os.environ.get("TUNNELWARD_CONFORMANCE_TOKEN", "")


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    headers = case.headers if case.headers is not None else {}
    headers["X-Timestamp"] = str(int(time.time() * 1000))
    if TOKEN and "X-Token" not in headers and "Authorization" not in headers:
        headers["X-Token"] = TOKEN
    case.headers = headers
