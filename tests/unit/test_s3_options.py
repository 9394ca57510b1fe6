"""S3Options: parsing, defaults, refusals, secrets kept out of every dump; key naming."""

from __future__ import annotations

import json

import pytest
from pydantic import SecretStr, ValidationError

from backupbench.errors import RecipeError
from backupbench.monitor.options import MonitorOptions
from backupbench.workloads.content_options import ContentOptions
from backupbench.workloads.kb2014 import SuiteOptions
from backupbench.schema import validate
from backupbench.workloads.s3 import S3Workload
from backupbench.workloads.s3_options import (DEFAULT_OBJECTS, PHASES, S3Options, check_bucket_name, normalise_endpoint,
                                      object_key, run_prefix)
from backupbench.workloads.s3_phase import key_set
from backupbench.workloads.s3_values import SizeRange

BASE = {"endpoint": "http://127.0.0.1:9000", "bucket": "backups"}


def opts(**values) -> S3Options:
    return S3Options(**{**BASE, **values})


def test_defaults_are_field_note_d():
    o = opts()
    assert o.object_size == SizeRange(1024 * 1024, 1024 * 1024) and o.object_size.fixed
    assert o.concurrency == 100
    assert o.object_count == DEFAULT_OBJECTS and o.duration is None
    assert o.s3_phases == PHASES == ("put", "get", "delete")
    assert o.create_bucket is False and o.insecure_tls is False
    assert o.data_bytes == DEFAULT_OBJECTS * 1024 * 1024


def test_command_line_strings_parse_like_recipe_values():
    o = opts(object_size="4MiB", concurrency="32", objects="500", s3_phases="put,get", request_timeout="2m")
    assert (o.object_size.low, o.concurrency, o.objects, o.s3_phases, o.request_timeout) == \
        (4 * 2**20, 32, 500, ("put", "get"), 120.0)
    assert opts(object_size="1MB").object_size.low == 1_000_000  # decimal MB, never confused with MiB
    assert opts(s3_phases=["put", "delete"]).s3_phases == ("put", "delete")


def test_duration_replaces_the_count():
    o = opts(duration="30s")
    assert o.duration == 30.0 and o.object_count is None and o.data_bytes is None
    with pytest.raises(ValidationError, match="either objects or duration"):
        opts(duration="30s", objects=10)


@pytest.mark.parametrize("phases, problem", [
    ("get", "must start with put"),
    ("put,put", "twice"),
    ("put,delete,get", "order"),
    ("put,list", "put"),
    ("put,delete,mixed", "order"),
    ("", "at least 1"),
])
def test_bad_phase_lists_are_refused(phases, problem):
    with pytest.raises(ValidationError, match=problem):
        opts(s3_phases=phases)


@pytest.mark.parametrize("url, expected", [
    ("http://127.0.0.1:9000", "http://127.0.0.1:9000"),
    ("http://127.0.0.1:9000/", "http://127.0.0.1:9000"),
    ("https://s3.example.com:443", "https://s3.example.com"),
    ("http://minio.lan:80", "http://minio.lan"),
    ("HTTPS://S3.Example.com", "https://s3.example.com"),
    ("http://[::1]:9000", "http://[::1]:9000"),
])
def test_endpoints_are_normalised(url, expected):
    assert normalise_endpoint(url) == expected


@pytest.mark.parametrize("url", ["127.0.0.1:9000", "ftp://host", "http://host/bucket", "http://u:p@host",
                                 "http://host:99999", "http://"])
def test_bad_endpoints_are_refused(url):
    with pytest.raises(ValueError):
        normalise_endpoint(url)


@pytest.mark.parametrize("name", ["ab", "Backups", "-abc", "abc-", "a..b", "192.168.1.1", "a_b", "x" * 64])
def test_bad_bucket_names_are_refused(name):
    with pytest.raises(ValueError):
        check_bucket_name(name)


def test_good_bucket_names_pass():
    for name in ("abc", "backup-repo.01", "x" * 63):
        assert check_bucket_name(name) == name


def test_keys_carry_the_run_tag():
    assert run_prefix("20250101T000000-ab12") == "backupbench/20250101T000000-ab12/"
    assert object_key("r1", 0) == "backupbench/r1/obj-00000000"
    assert object_key("r1", 123_456_789) == "backupbench/r1/obj-123456789"
    for bad in ("", "../x", "a/b", "-x", "a b"):
        with pytest.raises(ValueError):
            run_prefix(bad)


def test_key_set_gives_count_and_gaps():
    assert key_set(set()) == (0, ())
    assert key_set({0, 1, 2}) == (3, ())
    assert key_set({0, 2, 5}) == (6, (1, 3, 4))


def test_secrets_never_in_dumps_repr_or_settings():
    o = opts(access_key=SecretStr("AKIAEXAMPLEKEY123"), secret_key="s3cr3t-value-xyz")
    assert o.secret_key.get_secret_value() == "s3cr3t-value-xyz"
    texts = [json.dumps(o.model_dump(mode="json")), repr(o), str(o), o.model_dump_json(),
             json.dumps(S3Workload(o).settings())]
    for text in texts:
        assert "AKIAEXAMPLEKEY123" not in text and "s3cr3t-value-xyz" not in text
    assert "access_key" not in o.model_dump() and "secret_key" not in o.model_dump()


def test_one_key_without_the_other_is_refused_without_echoing_it():
    with pytest.raises(RecipeError) as caught:
        validate(S3Options, {**BASE, "secret_key": "s3cr3t-value-xyz"}, lambda loc: "--" + str(loc[0]) if loc else "x")
    assert "s3cr3t-value-xyz" not in caught.value.one_line()
    assert "access_key and secret_key" in caught.value.one_line()


def test_unknown_keys_are_refused():
    with pytest.raises(ValidationError, match="Extra inputs"):
        opts(size="1GiB")


def test_flags_do_not_clash_with_the_other_option_sets():
    # The data-content options (data, compress, dedupe, pattern) are shared on purpose.
    mine = set(S3Options.model_fields) - set(ContentOptions.model_fields)
    assert not mine & set(SuiteOptions.model_fields)
    assert not mine & set(MonitorOptions.model_fields)
    for name, field in S3Options.model_fields.items():
        assert field.description, name
        # click_options makes every bool an on-switch: a True default could never be turned off.
        if field.annotation is bool:
            assert field.default is False, name


def test_description_names_the_amount():
    assert opts(objects=10, concurrency=4).describe("put") == "PUT 1 MiB objects, 10 objects, 4 streams"
    assert opts(duration="5s").describe("get") == "GET 1 MiB objects, for 5 s, 100 streams"
    assert opts(object_size="1MiB-8MiB", s3_phases="put,mixed", objects=10).describe("mixed") == \
        "MIXED put=45,get=45,list=5,delete=5 of 1 MiB-8 MiB objects, 10 requests, 100 streams"


def test_workload_shape():
    w = S3Workload(opts(objects=10, object_size="2MiB"))
    assert (w.kind, w.buffered, w.needs_directory) == ("s3", False, False)
    assert w.space_needed() == 20 * 2**20
    assert w.target_label(None) == "http://127.0.0.1:9000/backups"
    settings = w.settings()
    assert settings["object_count"] == 10 and settings["key_prefix"] == "backupbench/<run_id>/"
