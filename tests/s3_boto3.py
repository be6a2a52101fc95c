"""Drives the simulator's S3 endpoint with boto3, an S3 client no one here wrote.

Run by tests/s3_sim.rs with S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_KEY_ID, S3_SECRET and S3_CAP
(the bucket's cap in bytes) in the environment; prints one JSON object of what happened.
"""

import json
import os
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError


def client(key_id, secret):
    return boto3.client(
        "s3",
        endpoint_url=os.environ["S3_ENDPOINT"],
        region_name=os.environ["S3_REGION"],
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        config=Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1},
        ),
    )


def error_code(call):
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"]
    return "no error"


def main():
    bucket = os.environ["S3_BUCKET"]
    key_id = os.environ["S3_KEY_ID"]
    secret = os.environ["S3_SECRET"]
    cap = int(os.environ["S3_CAP"])
    s3 = client(key_id, secret)
    out = {}

    body = b"hello from boto3 \x00\xff"
    s3.put_object(Bucket=bucket, Key="dir/a b.txt", Body=body, ContentType="text/plain")
    s3.put_object(Bucket=bucket, Key="dir/c.bin", Body=b"c")
    got = s3.get_object(Bucket=bucket, Key="dir/a b.txt")
    out["get_matches"] = got["Body"].read() == body
    out["content_type"] = got["ContentType"]
    listed = s3.list_objects_v2(Bucket=bucket, Prefix="dir/")
    out["listed"] = [o["Key"] for o in listed.get("Contents", [])]
    out["listed_sizes"] = [o["Size"] for o in listed.get("Contents", [])]
    out["head_length"] = s3.head_object(Bucket=bucket, Key="dir/c.bin")["ContentLength"]
    s3.delete_object(Bucket=bucket, Key="dir/a b.txt")
    out["after_delete"] = error_code(lambda: s3.head_object(Bucket=bucket, Key="dir/a b.txt"))
    out["get_missing"] = error_code(lambda: s3.get_object(Bucket=bucket, Key="dir/a b.txt"))
    out["listed_after_delete"] = [
        o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    ]
    s3.delete_object(Bucket=bucket, Key="dir/c.bin")

    wrong = client(key_id, "x" * len(secret))
    out["wrong_secret"] = error_code(lambda: wrong.put_object(Bucket=bucket, Key="w", Body=b"w"))
    unknown = client("NAKIUNKNOWNKEY000000", secret)
    out["unknown_key"] = error_code(lambda: unknown.get_object(Bucket=bucket, Key="w"))
    out["over_cap"] = error_code(
        lambda: s3.put_object(Bucket=bucket, Key="big", Body=b"x" * (cap + 1))
    )
    out["no_such_bucket"] = error_code(
        lambda: s3.put_object(Bucket="no-such-bucket", Key="k", Body=b"k")
    )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
