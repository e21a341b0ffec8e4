"""Schemathesis hooks for the contract fuzz (lab: ContractFuzzTest): every error is problem+json.

Loaded with SCHEMATHESIS_HOOKS. The check `problem_json_errors` holds every 4xx and 5xx answer to
what the contracts promise for errors: media type `application/problem+json` and an RFC 9457 body
whose `status` is the response's and whose `type` is a stable URI under
https://weightrelay.io/problems/ (never the request URL).
"""

import json

import schemathesis

PROBLEM_TYPES = "https://weightrelay.io/problems/"


@schemathesis.check
def problem_json_errors(ctx, response, case):
    """A 4xx or 5xx answer is application/problem+json with type, title and its own status."""
    if response.status_code < 400:
        return None
    content_type = (response.headers.get("content-type") or [""])[0]
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type != "application/problem+json":
        raise AssertionError(
            f"{response.status_code} answered as {content_type or 'no content type'}, "
            "not application/problem+json"
        )
    try:
        body = json.loads(response.content)
    except ValueError as e:
        raise AssertionError(f"{response.status_code} problem body is not JSON: {e}") from e
    if not isinstance(body, dict):
        raise AssertionError(f"{response.status_code} problem body is not an object: {body!r}")
    missing = [k for k in ("type", "title", "status") if k not in body]
    if missing:
        raise AssertionError(f"{response.status_code} problem body lacks {missing}: {body!r}")
    if body["status"] != response.status_code:
        raise AssertionError(
            f"problem status {body['status']!r} differs from the response's {response.status_code}"
        )
    if not isinstance(body["type"], str) or not body["type"].startswith(PROBLEM_TYPES):
        raise AssertionError(f"problem type {body['type']!r} is not under {PROBLEM_TYPES}")
    return None
