# Hooks of the conformance run (test/daemon/http/conformance.test.ts). Each request the run makes with a timestamp or a
# credential (X-Token, or an API key) gets a fresh X-Timestamp and the role's token, as the daemon asks of every
# request; a request the run makes without one (to see it refused) is left without it. The run never ends its own
# footing: the role's session, its user, or that user's role stay as they are (such a request names another), and a
# valid rate limit it sets is the highest one (a low one would leave the rest of the runs only 429s to look at); a
# directory it sets is one in its scratch directory.
import os
import time

import schemathesis

NOBODY = 999999999
DIRECTORIES = {"InstancePath", "Systemd.UnitDir", "InitD.ScriptDir", "InitD.PidDir", "InitD.LogDir"}


def _id(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    headers = dict(case.headers or {})
    if "X-Timestamp" in headers:
        headers["X-Timestamp"] = str(int(time.time() * 1000))
    if "X-Token" in headers or "Authorization" in headers:
        headers.pop("Authorization", None)
        headers["X-Token"] = os.environ["TUNNELWARD_TOKEN"]
    case.headers = headers

    body = case.body
    if not isinstance(body, dict):
        return
    own_user = int(os.environ["TUNNELWARD_USER_ID"])
    if case.path == "/sessionMgr/remove" and body.get("sessionID") == os.environ["TUNNELWARD_SESSION"]:
        body["sessionID"] = "not-this-session"
    if case.path == "/userMgr/remove" and _id(body.get("targetUserID")) == own_user:
        body["targetUserID"] = NOBODY
    if case.path == "/userMgr/modifyType" and _id(body.get("userID")) == own_user:
        body["userID"] = NOBODY
    if case.path == "/settings/set":
        # strict=true refuses a key that is no setting; the document cannot tie that rule to one value of a query
        # parameter, so such a request keeps its settings only (what it says of them is what is checked).
        if (case.query or {}).get("strict") == "true":
            known = set(os.environ["TUNNELWARD_SETTING_KEYS"].split(","))
            for key in [key for key in body if key not in known]:
                del body[key]
        for key, value in list(body.items()):
            valid = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1000000
            if key.startswith("RateLimit.") and valid:
                body[key] = 1000000
            # A directory tunnelward writes into (the instances' files, units, scripts) stays in the run's own
            # scratch directory: an absolute path the run drew ("/") would have files written on the host.
            if key in DIRECTORIES and isinstance(value, str) and value.startswith("/"):
                body[key] = os.path.join(os.environ["TUNNELWARD_SCRATCH"], "dirs", key.replace(".", "-"))
