"""The envelope's input checks (module_utils/envelope.py) as a data table: each bad value the
issue met, said under the user's variable name with the form to use; only failed ones listed."""
from __future__ import annotations

import pytest

from ansible_collections.inferops.sglang.plugins.module_utils.envelope import input_problems, problems

ENVELOPE = {"tp_size": 8, "mem_fraction_static": 0.88, "context_length": 131072, "max_running_requests": 16}


@pytest.mark.parametrize("overrides, said", [
    ({}, []),
    ({"context_length": "32768", "cuda_graph_max_bs_decode": 8.0}, []),
    ({"context_length": -4096}, ["sglang_envelope_overrides.context_length: -4096 must be at least 1"]),
    ({"context_length": "32k"},
     ["sglang_envelope_overrides.context_length: '32k' is not a whole number; write 32768 (32k = 32 x 1024)"]),
    ({"tp_size": 1.5}, ["sglang_envelope_overrides.tp_size: 1.5 is not a whole number; write an integer of at least 1"]),
    ({"mem_fraction_static": "high"},
     ["sglang_envelope_overrides.mem_fraction_static: 'high' is not a number; write a fraction of GPU memory between "
      "0 and 1, such as 0.88"]),
    ({"mem_fraction_static": 1.2}, ["sglang_envelope_overrides.mem_fraction_static: 1.2 must be between 0 and 1 "
                                    "(exclusive), such as 0.88"]),
    ({"max_running_requests": True}, ["sglang_envelope_overrides.max_running_requests: True is not a whole number; "
                                      "write an integer of at least 1"]),
    ({"attention_backend": "triton", "some_new_flag": "x"}, []),
    (["context_length", 32768], ["sglang_envelope_overrides must be a mapping of SGLang field names to values "
                                 "(got a list)"]),
], ids=["none", "numbers as strings and whole floats", "negative length", "32k", "tp_size 1.5",
        "fraction as a word", "fraction above 1", "a bool is not a count", "unknown fields: the parser's",
        "a list for the overrides"])
def test_override_problems(overrides, said):
    assert problems(ENVELOPE, overrides) == said


def test_envelope_problems_name_the_envelope_and_what_is_missing():
    assert problems({"context_length": 0}, {}) == [
        "sglang_envelope.context_length: 0 must be at least 1",
        "tp_size is not set: give it in sglang_envelope (or sglang_envelope_overrides for this host)",
        "mem_fraction_static is not set: give it in sglang_envelope (or sglang_envelope_overrides for this host)"]


@pytest.mark.parametrize("model_path, variant, draft, needs_draft, said", [
    ("/models/m", "ddtree", "/models/d", True, []),
    ("", "nextn", "", False, ["no model path given (sglang_model_path)"]),
    ("/models/m", "dflash", "", True, ["dflash needs a draft model: set sglang_draft_model_path"]),
    ("/models/m", "eagle3-own-head", "", False, []),
], ids=["all given", "no model path", "a variant with a draft model, without it", "a variant of the user's own "
        "without a draft model"])
def test_input_problems(model_path, variant, draft, needs_draft, said):
    assert input_problems(ENVELOPE, {}, model_path, variant, draft, needs_draft) == said


VARIANT = ("sglang_service_variants.ddtree", {"speculative_algorithm": "DDTREE", "speculative_num_draft_tokens": 16})


@pytest.mark.parametrize("layers, overrides, said", [
    ([VARIANT, ("sglang_service_extra_args", {})], {}, []),
    ([("sglang_service_variants.ddtree", {"mem_fraction_static": 1.7})], {},
     ["sglang_service_variants.ddtree.mem_fraction_static: 1.7 must be between 0 and 1 (exclusive), such as 0.88"]),
    ([("sglang_service_extra_args", {"speculative_num_draft_tokens": "16k"})], {},
     ["sglang_service_extra_args.speculative_num_draft_tokens: '16k' is not a whole number; write 16384 "
      "(16k = 16 x 1024)"]),
    ([("sglang_service_variants.ddtree", {"mem_fraction_static": 1.7})], {"mem_fraction_static": 0.9}, []),
    ([("sglang_service_extra_args", {"served_model_name": "qwen\nExecStartPre=/bin/rm"})], {},
     ["sglang_service_extra_args.served_model_name: 'qwen\\nExecStartPre=/bin/rm' carries a control character "
      "(a newline or a tab?); write it on one line"]),
    ([], {"mem_fraction_static": "0.85\n"},
     ["sglang_envelope_overrides.mem_fraction_static: '0.85\\n' carries a control character (a newline or a tab?); "
      "write it on one line"]),
    ([("sglang_service_variants.ddtree", ["speculative_algorithm", "DDTREE"])], {},
     ["sglang_service_variants.ddtree must be a mapping of SGLang field names to values (got a list)"]),
], ids=["a variant and extra arguments that are fine", "a fraction out of range through a variant",
        "32k-style through extra_args", "the host's override wins over the variant's value",
        "a newline in an extra argument", "a newline in a fraction", "a variant that is not a mapping"])
def test_every_layer_of_the_server_arguments_is_checked(layers, overrides, said):
    assert problems(ENVELOPE, overrides, layers=layers) == said


def test_a_model_path_with_a_newline_is_refused():
    assert input_problems(ENVELOPE, {}, "/models/m\n", "nextn", "", False) == [
        "sglang_model_path: '/models/m\\n' carries a control character (a newline or a tab?); write it on one line"]
