"""What an S3 error code means for a backupbench run and what to do about it: one line each
(pure). Used for a failed setup or cleanup request (s3_errors.error_for), a phase whose every
request failed, and the warning said after a phase where some requests failed or were retried.

Codes are S3's own (AWS's error responses; MinIO and moto answer the same ones) and the few a
server adds (moto's MissingUploadObjectWithObjectLockHeaders, MinIO's XMinioStorageFull).
Credential, clock, region and transport failures are s3_errors.py's, which knows the endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hint:
    problem: str   # what the answer means
    fix: str       # what the user can do
    kind: str = "engine"   # "input", "refused" or "engine": the error class a failed request gets


LOCK_HEADERS = Hint(
    "the server wants Content-MD5 or a checksum header on every upload to this bucket, because an Object "
    "Lock retention applies to it (the bucket's default retention, or --object-lock)",
    "run with --object-lock MODE --retention DURATION, whose PUTs carry x-amz-sdk-checksum-algorithm and "
    "x-amz-checksum-crc32c, or use a bucket without a default retention")
THROTTLED = Hint(
    "the server is throttling: it asked for fewer requests at a time",
    "lower --concurrency, or raise --max-attempts to wait it out (retried requests are counted apart)")
NO_LOCK = Hint(
    "the bucket has no Object Lock configuration, so objects cannot be locked in it",
    "use a bucket created with object lock enabled, or a new bucket name with --create-bucket", "refused")

HINTS: dict[str, Hint] = {
    "MissingUploadObjectWithObjectLockHeaders": LOCK_HEADERS,
    "SlowDown": THROTTLED,
    "ServiceUnavailable": THROTTLED,
    "Throttling": THROTTLED,
    "http-429": THROTTLED,
    "http-503": THROTTLED,
    "InternalError": Hint("the server failed the request internally",
                          "look at the server's log; an InternalError that lasts is a fault of the server"),
    "NoSuchBucket": Hint("the bucket does not exist", "check --bucket and --region, create the bucket, or pass "
                         "--create-bucket", "refused"),
    "InvalidBucketState": Hint(
        "the bucket's state forbids the request: Object Lock cannot be turned on for an existing bucket on "
        "most servers, and needs versioning enabled (not suspended)",
        "use a bucket created with object lock enabled: a new bucket name with --create-bucket and --object-lock "
        "makes one", "refused"),
    "ObjectLockConfigurationNotFoundError": NO_LOCK,
    "BucketNotEmpty": Hint("the bucket holds objects that are not this run's, so it is not removed",
                           "remove the bucket yourself if it is yours", "refused"),
    "NoSuchKey": Hint("an object this run wrote is not there any more",
                      "another client or a lifecycle rule deleted it, or the server lost it: check the bucket's "
                      "lifecycle rules and the server"),
    "NoSuchUpload": Hint("a multipart upload was ended before it completed",
                         "check the bucket's lifecycle rules (AbortIncompleteMultipartUpload) and other clients"),
    "EntityTooSmall": Hint("a part is below the server's smallest part size",
                           "raise --part-size (S3: at least 5 MiB for every part but the last)", "input"),
    "EntityTooLarge": Hint("an object or part is over the server's largest size",
                           "lower --object-size, or --multipart-threshold and --part-size", "input"),
    "InvalidPart": Hint("the server did not find a part the upload was completed with",
                        "parts were lost or replaced by another client; run again, and check the server"),
    "BadDigest": Hint("the bytes the server received do not match the checksum sent with them",
                      "something between here and the endpoint changes the data: check proxies and the network"),
    "XAmzContentSHA256Mismatch": Hint(
        "the server does not accept the unsigned payload the loader sends (x-amz-content-sha256: UNSIGNED-PAYLOAD)",
        "use a server or gateway that accepts UNSIGNED-PAYLOAD, as AWS S3, MinIO and moto do", "input"),
    "NotImplemented": Hint("the server does not implement this request",
                           "leave out what needs it: --object-lock, multipart uploads (raise --multipart-threshold) "
                           "or the mixed phase's LIST", "input"),
    "QuotaExceeded": Hint("the bucket or account is over its quota", "free space or write less (--objects, "
                          "--object-size)", "refused"),
    "XMinioStorageFull": Hint("the storage behind the bucket is full", "free space or write less (--objects, "
                              "--object-size)", "refused"),
    "InvalidBucketName": Hint("the bucket name is not a valid S3 name",
                              "use 3-63 lower-case letters, digits, dots and hyphens", "input"),
    "BucketAlreadyExists": Hint("another account owns a bucket of that name", "choose another --bucket", "input"),
    "RequestTimeout": Hint("the server gave up waiting for the request's body",
                           "check the network path to the endpoint, or lower --concurrency"),
    "InvalidRetentionPeriod": Hint("the bucket does not allow this retention", "choose a --retention the bucket "
                                   "allows", "input"),
    "OperationAborted": Hint("a conflicting operation on the bucket is in progress", "run again once it ended"),
}


def hint_for(code: str) -> Hint | None:
    return HINTS.get(code)


def said(code: str, message: str) -> Hint | None:
    """The hint for an answer, reading S3's own words where one code means several things: AWS
    answers a locked upload without a checksum, or locked headers on a bucket without lock, as
    InvalidRequest with a sentence saying which."""
    found = hint_for(code)
    if found is not None or code != "InvalidRequest":
        return found
    lowered = message.lower()
    if "content-md5" in lowered and "object lock" in lowered:
        return LOCK_HEADERS
    if "objectlockconfiguration" in lowered.replace(" ", ""):
        return NO_LOCK
    return None


def phase_lines(op: str, errors: dict[str, int], retried: dict[str, int], requests: int) -> list[str]:
    """What a phase's failed and retried requests mean, one line per kind (for a warning)."""
    lines = []
    for code, count in errors.items():
        hint = hint_for(code)
        said_here = f": {hint.problem} ({hint.fix})" if hint else ""
        lines.append(f"{op}: {count:,} of {requests:,} requests failed with {code}{said_here}")
    for code, count in retried.items():
        lines.append(f"{op}: {count:,} of {requests:,} requests were retried after {code} (their figures include "
                     "the waits; native/s3load retries 429/500/502/503/504 answers as the AWS SDKs do)")
    return lines
